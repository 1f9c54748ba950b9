/*
 * viewer_assets.h -- the files of viewer/, embedded at build time by
 * cmake/embed.cmake into a generated C source. Each is NUL-terminated;
 * the length excludes the NUL. Private to reports/.
 */
#ifndef MPLAN_VIEWER_ASSETS_H
#define MPLAN_VIEWER_ASSETS_H

#include <stddef.h>

extern const char mp_viewer_html[]; /* viewer/index.html: the page */
extern const size_t mp_viewer_html_len;
extern const char mp_viewer_css[]; /* viewer/viewer.css */
extern const size_t mp_viewer_css_len;
extern const char mp_viewer_js[]; /* viewer/viewer.js */
extern const size_t mp_viewer_js_len;

#endif /* MPLAN_VIEWER_ASSETS_H */
