/*
 * test_analyzer.c -- graph import, ordering, lifetimes and the problem
 * readers, through mp_model_load on small files written here.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "mplan/file.h"
#include "mplan/model.h"
#include "mplan/report.h"
#include "mplan/validate.h"

static char tmp_dir[] = "/tmp/mplan_analyzer_XXXXXX";

static const char *write_tmp(const char *name, const char *text) {
  static char path[4][256];
  static int k;
  char *p = path[k++ % 4];
  snprintf(p, 256, "%s/%s", tmp_dir, name);
  mp_error err;
  if (mp_file_write(p, text, strlen(text), &err) != MP_OK) abort();
  return p;
}

static mp_model *load(const char *name, const char *text, const mp_load_opts *o,
                      mp_status want, mp_error *err) {
  mp_model *m = NULL;
  mp_status st = mp_model_load(write_tmp(name, text), o, NULL, &m, err);
  if (st != want) {
    fprintf(stderr, "load %s: status %d (want %d): %s\n", name, st, want,
            err->msg);
  }
  CHECK(st == want);
  return m;
}

/* x -> relu -> t1 -> {mul (step 1), add (step 3)}; t2 feeds the add too. */
static const char multi[] =
    "{\"mplan\": \"graph/1\", \"name\": \"multi\", \"dims\": {\"N\": 1},\n"
    " \"tensors\": [\n"
    "  {\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [\"N\", 16], \"kind\": "
    "\"input\"},\n"
    "  {\"name\": \"w\", \"dtype\": \"f32\", \"shape\": [16], \"kind\": "
    "\"weight\"},\n"
    "  {\"name\": \"t1\", \"dtype\": \"f32\", \"shape\": [\"N\", 16]},\n"
    "  {\"name\": \"t2\", \"dtype\": \"f32\", \"shape\": [\"N\", 16]},\n"
    "  {\"name\": \"t3\", \"dtype\": \"f32\", \"shape\": [\"N\", 16]},\n"
    "  {\"name\": \"y\", \"dtype\": \"f32\", \"shape\": [\"N\", 16]},\n"
    "  {\"name\": \"z\", \"dtype\": \"i8\", \"shape\": [3]}],\n"
    " \"ops\": [\n"
    "  {\"name\": \"relu\", \"op\": \"Relu\", \"inputs\": [\"x\"], "
    "\"outputs\": "
    "[\"t1\"]},\n"
    "  {\"name\": \"mul\", \"op\": \"Mul\", \"inputs\": [\"t1\", \"w\"], "
    "\"outputs\": [\"t2\"]},\n"
    "  {\"name\": \"neg\", \"op\": \"Neg\", \"inputs\": [\"t2\"], \"outputs\": "
    "[\"t3\"]},\n"
    "  {\"name\": \"add\", \"op\": \"Add\", \"inputs\": [\"t1\", \"t3\"], "
    "\"outputs\": [\"y\"], \"attrs\": {\"note\": \"x\", \"k\": [1, 2]}},\n"
    "  {\"name\": \"side\", \"op\": \"SideProbe\", \"inputs\": [\"t2\"], "
    "\"outputs\": [\"z\"]}],\n"
    " \"outputs\": [\"y\"]}\n";

static const mp_buffer *buf(const mp_model *m, const char *name) {
  size_t i = 0;
  if (!mp_problem_find(mp_model_problem(m), name, &i)) return NULL;
  return mp_problem_buffer(mp_model_problem(m), i);
}

static void test_lifetimes(void) {
  mp_error err = {0};
  mp_model *m = load("multi.json", multi, NULL, MP_OK, &err);
  if (!m) return;
  const mp_buffer *t1 = buf(m, "t1"), *t2 = buf(m, "t2"), *y = buf(m, "y");
  CHECK_EQ_I(t1->first, 0);
  CHECK_EQ_I(t1->last, 3); /* the LAST consumer (add, step 3), not mul */
  CHECK_EQ_I(t2->first, 1);
  CHECK_EQ_I(t2->last, 4); /* read by neg (2) and side (4) */
  CHECK_EQ_I(y->first, 3);
  CHECK_EQ_I(y->last, 4); /* graph output: lives to the end */
  CHECK(buf(m, "x")->cls == MP_CLASS_RESIDENT);
  CHECK(buf(m, "w")->cls == MP_CLASS_RESIDENT);
  CHECK_EQ_U(buf(m, "z")->size, 3);
  CHECK_EQ_U(buf(m, "z")->padded, 16);
  CHECK_EQ_U(buf(m, "z")->first, 4);
  CHECK_EQ_U(buf(m, "z")->last, 4); /* no consumer: dies where born */
  CHECK_STR(mp_model_last_consumer(m, 2), "add");
  CHECK_STR(mp_model_producer(m, 2), "relu");
  CHECK_STR(mp_model_order_name(m), "file");
  const mp_graph *g = mp_model_graph(m);
  const mp_op *add = mp_graph_op(g, 3);
  CHECK_EQ_U(add->n_attrs, 2);
  CHECK_STR(add->attrs[0].s, "x");
  CHECK(add->attrs[1].kind == MP_ATTR_INTS && add->attrs[1].n == 2);
  mp_model_destroy(m);

  /* Inputs as activations; --dim scales every size. */
  mp_dim_binding d = {"N", 4};
  mp_load_opts o = {.inputs_as_activations = true, .dims = &d, .n_dims = 1};
  m = load("multi.json", multi, &o, MP_OK, &err);
  if (!m) return;
  CHECK(buf(m, "x")->cls == MP_CLASS_ACTIVATION);
  CHECK_EQ_I(buf(m, "x")->first, 0);
  CHECK_EQ_I(buf(m, "x")->last, 0);
  CHECK_EQ_U(buf(m, "t1")->size, 4 * 16 * 4);
  mp_model_destroy(m);

  d.name = "M";
  m = load("multi.json", multi, &o, MP_ERR_BAD_INPUT, &err);
  CHECK_HAS(err.msg, "no dim named 'M'");
}

/* The same graph listed out of order, and a cycle. */
static void test_order(void) {
  static const char unordered[] =
      "{\"mplan\": \"graph/1\", \"tensors\": [\n"
      " {\"name\": \"x\", \"dtype\": \"u8\", \"shape\": [4], \"kind\": "
      "\"input\"},\n"
      " {\"name\": \"a\", \"dtype\": \"u8\", \"shape\": [4]},\n"
      " {\"name\": \"b\", \"dtype\": \"u8\", \"shape\": [4], \"kind\": "
      "\"output\"}],\n"
      " \"ops\": [\n"
      "  {\"name\": \"second\", \"op\": \"Relu\", \"inputs\": [\"a\"], "
      "\"outputs\": [\"b\"]},\n"
      "  {\"name\": \"first\", \"op\": \"Relu\", \"inputs\": [\"x\"], "
      "\"outputs\": [\"a\"]}]}\n";
  mp_error err = {0};
  mp_model *m = load("unordered.json", unordered, NULL, MP_OK, &err);
  if (m) {
    CHECK_STR(mp_model_order_name(m), "topo");
    CHECK_STR(mp_model_step_op(m, 0), "first");
    CHECK_STR(mp_model_step_op(m, 1), "second");
    CHECK_EQ_I(buf(m, "a")->first, 0);
    CHECK_EQ_I(buf(m, "a")->last, 1);
    mp_model_destroy(m);
  }
  mp_load_opts o = {.order = MP_ORDER_FILE};
  load("unordered.json", unordered, &o, MP_ERR_BAD_INPUT, &err);
  CHECK_HAS(err.msg, "unordered.json: file order is not topological");
  CHECK_HAS(err.msg, "op 'second' (ops[0]) reads 'a' before op 'first'");

  static const char cycle[] =
      "{\"mplan\": \"graph/1\", \"tensors\": [\n"
      " {\"name\": \"x\", \"dtype\": \"u8\", \"shape\": [4], \"kind\": "
      "\"input\"},\n"
      " {\"name\": \"a\", \"dtype\": \"u8\", \"shape\": [4]},\n"
      " {\"name\": \"b\", \"dtype\": \"u8\", \"shape\": [4]},\n"
      " {\"name\": \"c\", \"dtype\": \"u8\", \"shape\": [4]}],\n"
      " \"ops\": [\n"
      "  {\"name\": \"p\", \"op\": \"Add\", \"inputs\": [\"x\", \"c\"], "
      "\"outputs\": [\"a\"]},\n"
      "  {\"name\": \"q\", \"op\": \"Relu\", \"inputs\": [\"a\"], \"outputs\": "
      "[\"b\"]},\n"
      "  {\"name\": \"r\", \"op\": \"Relu\", \"inputs\": [\"b\"], \"outputs\": "
      "[\"c\"]}]}\n";
  load("cycle.json", cycle, NULL, MP_ERR_BAD_INPUT, &err);
  CHECK_HAS(err.msg, "cycle.json: the graph has a cycle: ");
  CHECK_HAS(err.msg, "'p' -> 'q' -> 'r' -> 'p'");
}

static void test_graph_errors(void) {
  mp_error err = {0};
  static const char overflow[] =
      "{\"mplan\": \"graph/1\", \"tensors\": [\n"
      " {\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [4], \"kind\": "
      "\"input\"},\n"
      " {\"name\": \"huge\", \"dtype\": \"f32\", \"shape\": [4294967296, "
      "4294967296]}],\n"
      " \"ops\": [{\"name\": \"o\", \"op\": \"Expand\", \"inputs\": [\"x\"], "
      "\"outputs\": [\"huge\"]}]}\n";
  load("overflow.json", overflow, NULL, MP_ERR_BAD_INPUT, &err);
  CHECK_HAS(err.msg, "overflow.json: tensor 'huge': shape [4294967296,");
  CHECK_HAS(err.msg, "overflows 64 bits");

  static const char unbound[] =
      "{\"mplan\": \"graph/1\", \"dims\": {\"S\": null}, \"tensors\": [\n"
      " {\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [\"S\"], \"kind\": "
      "\"input\"},\n"
      " {\"name\": \"y\", \"dtype\": \"f32\", \"shape\": [\"S\"]}],\n"
      " \"ops\": [{\"name\": \"o\", \"op\": \"Relu\", \"inputs\": [\"x\"], "
      "\"outputs\": [\"y\"]}]}\n";
  load("unbound.json", unbound, NULL, MP_ERR_BAD_INPUT, &err);
  CHECK_HAS(err.msg, "dim 'S' is not bound (use --dim S=VALUE");
  mp_dim_binding d = {"S", 1000};
  mp_load_opts o = {.dims = &d, .n_dims = 1};
  mp_model *m = load("unbound.json", unbound, &o, MP_OK, &err);
  if (m) {
    CHECK_EQ_U(buf(m, "y")->size, 4000);
    mp_model_destroy(m);
  }
}

static void test_minimalloc(void) {
  mp_error err = {0};
  /* Half-open [lower, upper): b1 ends at 3 exactly where b2 starts, so they
   * may share bytes; read as inclusive they could not, and the arena
   * would be 16 instead of 12. */
  static const char csv[] =
      "size,id,upper,lower\r\n4,b1,3,0\r\n4,b2,9,3\r\n4,b3,9,0\r\n"
      "4,b4,21,9\r\n4,b5,21,0\r\n";
  mp_model *m = load("p.csv", csv, NULL, MP_OK, &err);
  if (!m) return;
  CHECK_EQ_I(buf(m, "b1")->first, 0);
  CHECK_EQ_I(buf(m, "b1")->last, 2);
  CHECK_EQ_I(buf(m, "b2")->first, 3);
  mp_plan *plan = NULL;
  CHECK(mp_plan_solve(mp_model_problem(m), NULL, &plan, &err) == MP_OK);
  if (plan) {
    CHECK_EQ_U(mp_plan_summary_of(plan)->arena_bytes, 12);
    CHECK_EQ_U(mp_plan_placements(plan)[0].offset,
               mp_plan_placements(plan)[1].offset);
    mp_plan_destroy(plan);
  }
  mp_model_destroy(m);

  load("bad1.csv", "id,lower,upper,size\nx,5,5,4\n", NULL, MP_ERR_BAD_INPUT,
       &err);
  CHECK_HAS(err.msg,
            "bad1.csv:2: buffer 'x': upper 5 must be greater than "
            "lower 5");
  load("bad2.csv", "id,lower,upper,size,colour\n", NULL, MP_ERR_BAD_INPUT,
       &err);
  CHECK_HAS(err.msg, "bad2.csv:1: unknown column 'colour'");
  load("bad3.csv", "id,lower,upper,size\na,0,1,4\nb,0,1\n", NULL,
       MP_ERR_BAD_INPUT, &err);
  CHECK_HAS(err.msg, "bad3.csv:3: 3 fields where the header has 4");
  load("bad4.csv", "id,lower,upper,size\na,0,1,0\n", NULL, MP_ERR_BAD_INPUT,
       &err);
  CHECK_HAS(err.msg, "bad4.csv:2: buffer 'a': size is 0");
  load("bad5.csv", "id,lower,upper,size\na,0,1,4\na,2,3,4\n", NULL,
       MP_ERR_BAD_INPUT, &err);
  CHECK_HAS(err.msg, "bad5.csv:3: buffer 'a' is defined twice");
  load("bad6.csv", "id,lower,upper,size\na,0,1,4x\n", NULL, MP_ERR_BAD_INPUT,
       &err);
  CHECK_HAS(err.msg, "bad6.csv:2: column 'size': '4x' is not an integer");
  mp_dim_binding d = {"N", 1};
  mp_load_opts o = {.dims = &d, .n_dims = 1};
  load("ok.csv", csv, &o, MP_ERR_BAD_INPUT, &err);
  CHECK_HAS(err.msg, "--dim applies only to graph models");
}

static void test_lifetime_table(void) {
  mp_error err = {0};
  load("lt1.json",
       "{\"mplan\": \"lifetimes/1\", \"tensors\": [{\"name\": \"a\", "
       "\"first_use\": 4, \"last_use\": 2, \"size\": 8}]}",
       NULL, MP_ERR_BAD_INPUT, &err);
  CHECK_HAS(err.msg,
            "lt1.json: tensors[0] ('a'): first_use 4 is after last_use 2");
  load("lt2.json",
       "{\"mplan\": \"lifetimes/1\", \"steps\": 3, \"tensors\": [{\"name\": "
       "\"a\", \"first_use\": 0, \"last_use\": 3, \"size\": 8}]}",
       NULL, MP_ERR_BAD_INPUT, &err);
  CHECK_HAS(err.msg, "last_use: 3 is not below steps (3)");
  load("lt3.json", "{\"mplan\": \"lifetimes/2\", \"tensors\": []}", NULL,
       MP_ERR_BAD_INPUT, &err);
  CHECK_HAS(err.msg, "unsupported format 'lifetimes/2'");
  load("lt4.json", "{\"mplan\": \"lifetimes/1\",\n  \"tensors\": [1, 2,]}",
       NULL, MP_ERR_BAD_INPUT, &err);
  CHECK_HAS(err.msg, "lt4.json:2:");
  CHECK_HAS(err.msg, "malformed JSON");
}

/* plan -> plan JSON -> read back -> same offsets, still valid. */
static void test_plan_roundtrip(void) {
  mp_error err = {0};
  mp_model *m = load("multi.json", multi, NULL, MP_OK, &err);
  mp_plan *plan = NULL;
  mp_buf text;
  mp_buf_init(&text, NULL);
  if (!m) return;
  CHECK(mp_plan_solve(mp_model_problem(m), NULL, &plan, &err) == MP_OK);
  CHECK(mp_report_plan_json(m, plan, &text, &err) == MP_OK);
  mp_load_opts o = {.allow_plan = true};
  mp_model *back = load("plan.json", mp_buf_str(&text), &o, MP_OK, &err);
  if (back) {
    const mp_problem *p = mp_model_problem(back);
    size_t cap = mp_model_arena_bytes(back);
    CHECK_EQ_U(mp_problem_count(p), mp_problem_count(mp_model_problem(m)));
    CHECK_EQ_U(cap, mp_plan_summary_of(plan)->arena_bytes);
    for (size_t i = 0; i < mp_problem_count(p); i++) {
      CHECK_EQ_U(mp_model_placements(back)[i].offset,
                 mp_plan_placements(plan)[i].offset);
      CHECK_EQ_I(mp_problem_buffer(p, i)->first,
                 mp_problem_buffer(mp_model_problem(m), i)->first);
    }
    CHECK(mp_validate(p, mp_model_placements(back), &cap, 1, NULL, &err) ==
          MP_OK);
    CHECK_STR(mp_model_step_op(back, 3), "add");
    CHECK_STR(mp_model_last_consumer(back, 2), "add");
    mp_model_destroy(back);
  }
  mp_buf_free(&text);
  mp_plan_destroy(plan);
  mp_model_destroy(m);
}

int main(void) {
  if (!mkdtemp(tmp_dir)) return 2;
  test_lifetimes();
  test_order();
  test_graph_errors();
  test_minimalloc();
  test_lifetime_table();
  test_plan_roundtrip();
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp_dir);
  return check_exit("test_analyzer");
}
