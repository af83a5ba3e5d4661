/* emu/engine/_native.h: what the parts of emu.engine._native share (issue #49): libunicorn's functions (their
 * addresses come from the Python binding's loaded library, emu/engine/native.py), interned names, small byte
 * helpers, and each part's functions for the module's method table (_native.c). */
#ifndef PREEMU_NATIVE_H
#define PREEMU_NATIVE_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <unicorn/unicorn.h>

typedef uc_err (*reg_batch_fn)(uc_engine *, int *, void **, int);
typedef uc_err (*mem_rw_fn)(uc_engine *, uint64_t, void *, size_t);
typedef uc_err (*reg_rw_fn)(uc_engine *, int, void *);
typedef uc_err (*hook_add_fn)(uc_engine *, uc_hook *, int, void *, void *, uint64_t, uint64_t, ...);
typedef uc_err (*emu_stop_fn)(uc_engine *);
typedef uc_err (*emu_start_fn)(uc_engine *, uint64_t, uint64_t, uint64_t, size_t);

extern reg_batch_fn p_reg_read_batch, p_reg_write_batch;
extern mem_rw_fn p_mem_read, p_mem_write;
extern reg_rw_fn p_reg_read;
extern hook_add_fn p_hook_add;
extern emu_start_fn p_emu_start;
extern emu_stop_fn p_emu_stop;
extern PyObject *UcError;                 /* the binding's exception class, raised as its calls raise it */
extern PyObject *s_hook_exception;        /* "_hook_exception", where the binding keeps a callback's exception */
extern PyObject *s_uch, *s_value;         /* "_uch", "value": a Uc's handle is uc._uch.value */
extern PyObject *s_tid, *s_g, *s_held, *s_cur, *s_frames;   /* the attributes g_store_cb reads */

static inline void *slots(uint8_t *buf, void **ptrs, int n) {
    for (int i = 0; i < n; i++)
        ptrs[i] = buf + 16 * i;
    return ptrs;
}
static inline void put64(uint8_t *b, size_t off, uint64_t v) { memcpy(b + off, &v, 8); }
static inline void put32(uint8_t *b, size_t off, uint32_t v) { memcpy(b + off, &v, 4); }
static inline void put16(uint8_t *b, size_t off, uint16_t v) { memcpy(b + off, &v, 2); }
static inline uint64_t get64(const uint8_t *b, size_t off) { uint64_t v; memcpy(&v, b + off, 8); return v; }
static inline uint32_t get32(const uint8_t *b, size_t off) { uint32_t v; memcpy(&v, b + off, 4); return v; }
static inline uint16_t get16(const uint8_t *b, size_t off) { uint16_t v; memcpy(&v, b + off, 2); return v; }

/* _native.c */
int ready(void);                                          /* init() was called (else a RuntimeError is set) */
uc_engine *handle(PyObject *uc);                          /* uc._uch.value */
PyObject *uc_error(uc_err e);                             /* raise UcError(e); NULL */
int nargs(Py_ssize_t n, Py_ssize_t want, const char *name);
PyObject *u64_tuple(const uint64_t *v, int n);

/* _native_sigframe.c: sigframe.py's setup_rt_frame and restore_rt_frame without an XSAVE area */
void sigframe_init(void);
PyObject *n_setup_frame(PyObject *self, PyObject *args);
PyObject *n_restore_frame(PyObject *self, PyObject *args);

/* _native_hooks.c: hooks' C trampolines, emu_start, the instruction counter's questions */
int hooks_init(void);
PyObject *n_hook_add(PyObject *self, PyObject *args);
PyObject *n_emu_start(PyObject *self, PyObject *const *a, Py_ssize_t n);
PyObject *n_counter_stopping(PyObject *self, PyObject *const *a, Py_ssize_t n);
PyObject *n_counter_at(PyObject *self, PyObject *const *a, Py_ssize_t n);
#endif
