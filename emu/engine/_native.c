/* emu.engine._native: the real-program sweep's per-point path in C (issue #49). emu/engine/native.py loads it
 * (PREEMU_NATIVE=0: not at all) and binds its functions where the Python ones were; each mirrors one:
 *
 *   this file             regbatch.py's read_reg, read_u64, mem_read, mem_write, read_fields and RegBatch's
 *                         four calls
 *   _native_sigframe.c    sigframe.py's setup_rt_frame and restore_rt_frame (no XSAVE area)
 *   _native_hooks.c       the binding's hook_add (code, SYSCALL, interrupt) and emu_start; icount's stopping, at;
 *                         gclock's store hook's first test (the stores it need not see)
 *
 * Unicorn is not linked: init() receives the addresses of the libunicorn functions the Python binding has
 * already loaded, so this module calls the same library instance as everything else; unicorn.h gives the types
 * and register ids at build time (setup.py finds the unicorn wheel's headers). Nothing here decides: the
 * watch, the request, the oracle and the slice loop stay Python.
 */
#include "_native.h"

reg_batch_fn p_reg_read_batch, p_reg_write_batch;
mem_rw_fn p_mem_read, p_mem_write;
reg_rw_fn p_reg_read;
hook_add_fn p_hook_add;
emu_start_fn p_emu_start;
emu_stop_fn p_emu_stop;
PyObject *UcError, *s_hook_exception, *s_uch, *s_value;
PyObject *s_tid, *s_g, *s_held, *s_cur, *s_frames;

int ready(void) {
    if (!p_reg_read_batch) {
        PyErr_SetString(PyExc_RuntimeError, "emu.engine._native: init() was not called (emu/engine/native.py does)");
        return 0;
    }
    return 1;
}

static PyObject *n_init(PyObject *self, PyObject *args) {
    unsigned long long rr, rw, mr, mw, r1, ha, es, st;
    PyObject *err_class;
    if (!PyArg_ParseTuple(args, "KKKKKOKKK", &rr, &rw, &mr, &mw, &r1, &err_class, &ha, &es, &st))
        return NULL;
    p_emu_start = (emu_start_fn)(uintptr_t)st;
    p_hook_add = (hook_add_fn)(uintptr_t)ha;
    p_emu_stop = (emu_stop_fn)(uintptr_t)es;
    Py_INCREF(err_class);
    Py_XSETREF(UcError, err_class);
    p_reg_read = (reg_rw_fn)(uintptr_t)r1;
    p_reg_read_batch = (reg_batch_fn)(uintptr_t)rr;
    p_reg_write_batch = (reg_batch_fn)(uintptr_t)rw;
    p_mem_read = (mem_rw_fn)(uintptr_t)mr;
    p_mem_write = (mem_rw_fn)(uintptr_t)mw;
    Py_RETURN_NONE;
}

PyObject *u64_tuple(const uint64_t *v, int n) {
    PyObject *t = PyTuple_New(n);
    if (!t)
        return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *x = PyLong_FromUnsignedLongLong(v[i]);
        if (!x) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}

/* --- regbatch.py's one-register and memory calls (mirrors read_reg, read_u64, mem_read, mem_write) ------
 * Called with the Uc object itself, so the Python callers bind these functions in place of regbatch's and no
 * Python frame stands between them and Unicorn. */
uc_engine *handle(PyObject *uc) {
    PyObject *h = PyObject_GetAttr(uc, s_uch);
    if (!h)
        return NULL;
    PyObject *v = PyObject_GetAttr(h, s_value);
    Py_DECREF(h);
    if (!v)
        return NULL;
    if (v == Py_None) {
        Py_DECREF(v);
        PyErr_SetString(PyExc_RuntimeError, "the Unicorn engine was released");
        return NULL;
    }
    void *p = PyLong_AsVoidPtr(v);
    Py_DECREF(v);
    return (uc_engine *)p;
}

PyObject *uc_error(uc_err e) {
    PyObject *x = PyObject_CallFunction(UcError, "i", (int)e);
    if (x) {
        PyErr_SetObject(UcError, x);
        Py_DECREF(x);
    }
    return NULL;
}

int nargs(Py_ssize_t n, Py_ssize_t want, const char *name) {
    if (n != want) {
        PyErr_Format(PyExc_TypeError, "%s takes %zd arguments (%zd given)", name, want, n);
        return 0;
    }
    return ready();
}

static PyObject *n_read_reg(PyObject *self, PyObject *const *a, Py_ssize_t n) {
    if (!nargs(n, 2, "read_reg"))
        return NULL;
    uc_engine *uc = handle(a[0]);
    int reg = PyLong_AsLong(a[1]);
    if (!uc || PyErr_Occurred())
        return NULL;
    uint64_t buf[8] = {0};                  /* room for any register; the low 64 bits are returned */
    if (p_reg_read(uc, reg, buf))
        return PyErr_Format(PyExc_RuntimeError, "uc_reg_read of register %d failed", reg);
    return PyLong_FromUnsignedLongLong(buf[0]);
}

#define MAXFIELDS 32

static PyObject *n_read_u64(PyObject *self, PyObject *const *a, Py_ssize_t n) {
    if (!nargs(n, 2, "read_u64"))
        return NULL;
    uc_engine *uc = handle(a[0]);
    uint64_t addr = PyLong_AsUnsignedLongLongMask(a[1]);
    if (!uc || PyErr_Occurred())
        return NULL;
    uint64_t v = 0;
    uc_err e = p_mem_read(uc, addr, &v, 8);
    return e ? uc_error(e) : PyLong_FromUnsignedLongLong(v);
}

static PyObject *n_mem_read(PyObject *self, PyObject *const *a, Py_ssize_t n) {
    if (!nargs(n, 3, "mem_read"))
        return NULL;
    uc_engine *uc = handle(a[0]);
    uint64_t addr = PyLong_AsUnsignedLongLongMask(a[1]);
    Py_ssize_t len = PyLong_AsSsize_t(a[2]);
    if (!uc || PyErr_Occurred())
        return NULL;
    if (len < 0)
        return PyErr_Format(PyExc_ValueError, "mem_read of %zd bytes", len);
    PyObject *b = PyBytes_FromStringAndSize(NULL, len);
    if (!b)
        return NULL;
    uc_err e = p_mem_read(uc, addr, PyBytes_AS_STRING(b), (size_t)len);
    if (e) {
        Py_DECREF(b);
        return uc_error(e);
    }
    return b;
}

static PyObject *n_mem_write(PyObject *self, PyObject *const *a, Py_ssize_t n) {
    if (!nargs(n, 3, "mem_write"))
        return NULL;
    uc_engine *uc = handle(a[0]);
    uint64_t addr = PyLong_AsUnsignedLongLongMask(a[1]);
    if (!uc || PyErr_Occurred())
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(a[2], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    uc_err e = p_mem_write(uc, addr, view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    if (e)
        return uc_error(e);
    Py_RETURN_NONE;
}
/* read_fields(uc, base, spec) -> tuple: regbatch.read_fields. spec: (uint32 offset, uint8 size, 3 pad bytes) per
 * field, in the order wanted; the fields' span is read at once (a struct's fields share its pages), field by
 * field only when that read fails, so that UcError means what the Python reference's means: a field's own
 * bytes are not mapped. */
static PyObject *n_read_fields(PyObject *self, PyObject *const *a, Py_ssize_t n) {
    if (!nargs(n, 3, "read_fields"))
        return NULL;
    uc_engine *uc = handle(a[0]);
    uint64_t base = PyLong_AsUnsignedLongLongMask(a[1]);
    if (!uc || PyErr_Occurred())
        return NULL;
    if (!PyBytes_Check(a[2]) || PyBytes_GET_SIZE(a[2]) % 8 || PyBytes_GET_SIZE(a[2]) > 8 * MAXFIELDS) {
        PyErr_SetString(PyExc_ValueError, "read_fields: a spec of up to 32 8-byte fields (regbatch.field_spec)");
        return NULL;
    }
    const uint8_t *spec = (const uint8_t *)PyBytes_AS_STRING(a[2]);
    int nf = (int)(PyBytes_GET_SIZE(a[2]) / 8);
    uint32_t lo = UINT32_MAX, hi = 0;
    for (int i = 0; i < nf; i++) {
        uint32_t off = get32(spec, 8 * (size_t)i), size = spec[8 * i + 4];
        if (size != 1 && size != 2 && size != 4 && size != 8)
            return PyErr_Format(PyExc_ValueError, "read_fields: a field of %u bytes", size);
        if (off < lo)
            lo = off;
        if (off + size > hi)
            hi = off + size;
    }
    uint64_t vals[MAXFIELDS];
    uint8_t span[4096];                     /* a larger span is read field by field */
    int whole = nf > 0 && hi - lo <= sizeof span && !p_mem_read(uc, base + lo, span, hi - lo);
    for (int i = 0; i < nf; i++) {
        uint32_t off = get32(spec, 8 * (size_t)i), size = spec[8 * i + 4];
        uint64_t v = 0;
        if (whole) {
            memcpy(&v, span + (off - lo), size);
        } else {
            uc_err e = p_mem_read(uc, base + off, &v, size);
            if (e)
                return uc_error(e);
        }
        vals[i] = v;
    }
    return u64_tuple(vals, nf);
}

/* --- regbatch.RegBatch's calls (mirrors __call__, raw, write, write_raw) ---------------------------------
 * ids: the registers' int32 ids as bytes; wide: one byte per register, 1 for a 128-bit (XMM) one. Each register
 * has a 16-byte slot, zeroed before a read (a 16- or 32-bit register fills only its bytes). */
#define MAXBATCH 64

static int batch_args(PyObject *const *a, int **ids, const char **wide, int *n) {
    if (!PyBytes_Check(a[1]) || !PyBytes_Check(a[2])) {
        PyErr_SetString(PyExc_TypeError, "ids and wide are bytes");
        return 0;
    }
    *n = (int)(PyBytes_GET_SIZE(a[1]) / sizeof(int));
    if (*n > MAXBATCH || PyBytes_GET_SIZE(a[2]) != *n) {
        PyErr_SetString(PyExc_ValueError, "a register batch of more than 64, or ids and wide of different lengths");
        return 0;
    }
    *ids = (int *)PyBytes_AS_STRING(a[1]);
    *wide = PyBytes_AS_STRING(a[2]);
    return 1;
}

static int batch_read(uc_engine *uc, int *ids, int n, uint8_t *buf) {
    void *ptrs[MAXBATCH];
    memset(buf, 0, 16 * (size_t)n);
    if (p_reg_read_batch(uc, ids, slots(buf, ptrs, n), n)) {
        PyErr_SetString(PyExc_RuntimeError, "uc_reg_read_batch failed");
        return 0;
    }
    return 1;
}

/* batch_values(uc, ids, wide) -> tuple of ints */
static PyObject *n_batch_values(PyObject *self, PyObject *const *a, Py_ssize_t nargs_) {
    int *ids, n;
    const char *wide;
    if (!nargs(nargs_, 3, "batch_values") || !batch_args(a, &ids, &wide, &n))
        return NULL;
    uc_engine *uc = handle(a[0]);
    uint8_t buf[16 * MAXBATCH];
    if (!uc || !batch_read(uc, ids, n, buf))
        return NULL;
    PyObject *t = PyTuple_New(n);
    if (!t)
        return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *x = wide[i] ? _PyLong_FromByteArray(buf + 16 * i, 16, 1, 0)
                              : PyLong_FromUnsignedLongLong(get64(buf, 16 * (size_t)i));
        if (!x) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}

/* batch_raw(uc, ids, wide) -> bytes (16 a register) */
static PyObject *n_batch_raw(PyObject *self, PyObject *const *a, Py_ssize_t nargs_) {
    int *ids, n;
    const char *wide;
    if (!nargs(nargs_, 3, "batch_raw") || !batch_args(a, &ids, &wide, &n))
        return NULL;
    uc_engine *uc = handle(a[0]);
    uint8_t buf[16 * MAXBATCH];
    if (!uc || !batch_read(uc, ids, n, buf))
        return NULL;
    return PyBytes_FromStringAndSize((const char *)buf, 16 * (Py_ssize_t)n);
}

static int batch_write(uc_engine *uc, int *ids, int n, uint8_t *buf) {
    void *ptrs[MAXBATCH];
    if (p_reg_write_batch(uc, ids, slots(buf, ptrs, n), n)) {
        PyErr_SetString(PyExc_RuntimeError, "uc_reg_write_batch failed");
        return 0;
    }
    return 1;
}

/* batch_write(uc, ids, wide, values): each value masked to its width (64 or 128 bits) */
static PyObject *n_batch_write(PyObject *self, PyObject *const *a, Py_ssize_t nargs_) {
    int *ids, n;
    const char *wide;
    if (!nargs(nargs_, 4, "batch_write") || !batch_args(a, &ids, &wide, &n))
        return NULL;
    uc_engine *uc = handle(a[0]);
    if (!uc)
        return NULL;
    PyObject *seq = PySequence_Fast(a[3], "values");
    if (!seq)
        return NULL;
    uint8_t buf[16 * MAXBATCH];
    memset(buf, 0, sizeof buf);
    Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (int i = 0; i < n && i < m; i++) {
        if (wide[i]) {
            static PyObject *mask128;
            if (!mask128)
                mask128 = PyLong_FromString("ffffffffffffffffffffffffffffffff", NULL, 16);
            PyObject *v = mask128 ? PyNumber_And(items[i], mask128) : NULL;
            if (!v || _PyLong_AsByteArray((PyLongObject *)v, buf + 16 * i, 16, 1, 0) < 0) {
                Py_XDECREF(v);
                Py_DECREF(seq);
                return NULL;
            }
            Py_DECREF(v);
        } else {
            uint64_t v = PyLong_AsUnsignedLongLongMask(items[i]);
            if (v == (uint64_t)-1 && PyErr_Occurred()) {
                Py_DECREF(seq);
                return NULL;
            }
            put64(buf, 16 * (size_t)i, v);
        }
    }
    Py_DECREF(seq);
    if (m < n)
        return PyErr_Format(PyExc_ValueError, "%d registers, %zd values", n, m);
    if (!batch_write(uc, ids, n, buf))
        return NULL;
    Py_RETURN_NONE;
}

/* batch_write_raw(uc, ids, wide, data): 16-byte slots in list order (batch_raw's format) */
static PyObject *n_batch_write_raw(PyObject *self, PyObject *const *a, Py_ssize_t nargs_) {
    int *ids, n;
    const char *wide;
    if (!nargs(nargs_, 4, "batch_write_raw") || !batch_args(a, &ids, &wide, &n))
        return NULL;
    uc_engine *uc = handle(a[0]);
    if (!uc)
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(a[3], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    uint8_t buf[16 * MAXBATCH];
    memset(buf, 0, sizeof buf);
    memcpy(buf, view.buf, view.len < 16 * n ? (size_t)view.len : 16 * (size_t)n);
    PyBuffer_Release(&view);
    if (!batch_write(uc, ids, n, buf))
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"counter_stopping", (PyCFunction)(void (*)(void))n_counter_stopping, METH_FASTCALL, "InsnCounter.stopping"},
    {"counter_at", (PyCFunction)(void (*)(void))n_counter_at, METH_FASTCALL, "InsnCounter.at"},
    {"batch_values", (PyCFunction)(void (*)(void))n_batch_values, METH_FASTCALL, "RegBatch.__call__"},
    {"batch_raw", (PyCFunction)(void (*)(void))n_batch_raw, METH_FASTCALL, "RegBatch.raw"},
    {"batch_write", (PyCFunction)(void (*)(void))n_batch_write, METH_FASTCALL, "RegBatch.write"},
    {"batch_write_raw", (PyCFunction)(void (*)(void))n_batch_write_raw, METH_FASTCALL, "RegBatch.write_raw"},
    {"hook_add", n_hook_add, METH_VARARGS, "uc.hook_add for code, SYSCALL and interrupt hooks, with a C trampoline"},
    {"emu_start", (PyCFunction)(void (*)(void))n_emu_start, METH_FASTCALL, "Uc.emu_start"},
    {"read_reg", (PyCFunction)(void (*)(void))n_read_reg, METH_FASTCALL, "regbatch.read_reg"},
    {"read_u64", (PyCFunction)(void (*)(void))n_read_u64, METH_FASTCALL, "regbatch.read_u64"},
    {"read_fields", (PyCFunction)(void (*)(void))n_read_fields, METH_FASTCALL, "regbatch.read_fields"},
    {"mem_read", (PyCFunction)(void (*)(void))n_mem_read, METH_FASTCALL, "regbatch.mem_read"},
    {"mem_write", (PyCFunction)(void (*)(void))n_mem_write, METH_FASTCALL, "regbatch.mem_write"},
    {"init", n_init, METH_VARARGS,
     "init(reg_read_batch, reg_write_batch, mem_read, mem_write, reg_read, UcError, hook_add, emu_stop, emu_start)"},
    {"setup_frame", n_setup_frame, METH_VARARGS, "sigframe.setup_rt_frame without an XSAVE area"},
    {"restore_frame", n_restore_frame, METH_VARARGS, "sigframe.restore_rt_frame's registers and FXSAVE image"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "emu.engine._native",
    "preemu's per-point signal path in C (emu/engine/native.py loads it; PREEMU_NATIVE=0 turns it off)", -1,
    methods};

PyMODINIT_FUNC PyInit__native(void) {
    s_uch = PyUnicode_InternFromString("_uch");
    s_value = PyUnicode_InternFromString("value");
    s_hook_exception = PyUnicode_InternFromString("_hook_exception");
    s_tid = PyUnicode_InternFromString("tid");
    s_g = PyUnicode_InternFromString("g");
    s_held = PyUnicode_InternFromString("held");
    s_cur = PyUnicode_InternFromString("cur");
    s_frames = PyUnicode_InternFromString("frames");
    if (!s_uch || !s_value || !s_hook_exception || !s_tid || !s_g || !s_held || !s_cur || !s_frames)
        return NULL;
    sigframe_init();
    if (hooks_init() < 0)
        return NULL;
    return PyModule_Create(&module);
}
