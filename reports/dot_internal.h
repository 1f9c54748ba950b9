/*
 * dot_internal.h -- for tests of the SVG layout's failure handling only.
 */
#ifndef MPLAN_DOT_INTERNAL_H
#define MPLAN_DOT_INTERNAL_H

/* The next n layouts' child processes kill themselves (SIGKILL) before
 * laying out, as a crashing Graphviz would end: the layout is tried again
 * without the fusion clusters, and a second crash is an error. */
void dot_test_crash_layouts(unsigned n);

#endif /* MPLAN_DOT_INTERNAL_H */
