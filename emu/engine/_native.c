/* emu.engine._native: the per-point signal path of the real process in C (issue #49).
 *
 * Mirrors emu/linux/sigframe.py's setup_rt_frame and restore_rt_frame for a frame without an XSAVE area
 * (--cpu v1/v2: the FXSAVE image alone), which in turn mirror arch/x86/kernel/signal.c (get_sigframe),
 * signal_64.c (x64_setup_rt_frame, restore_sigcontext) and struct rt_sigframe. The Python functions stay the
 * reference and the fallback (PREEMU_NATIVE=0, emu/engine/native.py); tests/test_native.py compares the two
 * byte for byte and register for register.
 *
 * Unicorn is not linked: emu/engine/native.py passes the addresses of the libunicorn functions the Python
 * binding has already loaded (init), so this module calls the same library instance as everything else.
 * Only unicorn.h's types and register ids are used at build time.
 *
 * Errors: a Unicorn error is returned to Python as the int uc_err (the wrapper raises UcError, as the
 * Python path's mem_write/mem_read do); everything else is a Python exception with a message.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <unicorn/unicorn.h>

typedef uc_err (*reg_batch_fn)(uc_engine *, int *, void **, int);
typedef uc_err (*mem_rw_fn)(uc_engine *, uint64_t, void *, size_t);
typedef uc_err (*reg_rw_fn)(uc_engine *, int, void *);

static reg_batch_fn p_reg_read_batch, p_reg_write_batch;
static mem_rw_fn p_mem_read, p_mem_write;
static reg_rw_fn p_reg_read;
typedef uc_err (*hook_add_fn)(uc_engine *, uc_hook *, int, void *, void *, uint64_t, uint64_t, ...);
typedef uc_err (*emu_stop_fn)(uc_engine *);
static hook_add_fn p_hook_add;
typedef uc_err (*emu_start_fn)(uc_engine *, uint64_t, uint64_t, uint64_t, size_t);
static emu_start_fn p_emu_start;
static emu_stop_fn p_emu_stop;
static PyObject *s_hook_exception;        /* "_hook_exception", where the binding keeps a callback's exception */
static PyObject *UcError;                 /* the binding's exception class, raised as its calls raise it */
static PyObject *s_uch, *s_value;         /* "_uch", "value": a Uc's handle is uc._uch.value */

/* --- the layout: sigframe.py's table ------------------------------------------------------------- */
enum {
    PRETCODE = 0, UC = 8, UC_FLAGS = UC + 0, UC_LINK = UC + 8, UC_STACK = UC + 16, MCONTEXT = UC + 40,
    NGREGS_MC = 18,                        /* R8..R15 RDI RSI RBP RBX RDX RAX RCX RSP RIP EFLAGS */
    CSGSFS = MCONTEXT + 8 * 18, ERR = MCONTEXT + 8 * 19, TRAPNO = MCONTEXT + 8 * 20, CR2 = MCONTEXT + 8 * 22,
    FPSTATE_PTR = MCONTEXT + 8 * 23, UC_SIGMASK = MCONTEXT + 256, SIGINFO = UC_SIGMASK + 8,
    FRAME_SIZE = SIGINFO + 128, FXSAVE_SIZE = 512, REDZONE = 128,
    USER_CS = 0x33, USER_SS = 0x2B, UC_SIGCONTEXT_SS = 0x2, UC_STRICT_RESTORE_SS = 0x4,
};
#define FIX_EFLAGS (0x40DD5ULL | 0x10000ULL)
#define ENTRY_CLEAR (0x400ULL | 0x100ULL | 0x40000ULL | 0x10000ULL)

/* the mcontext's general registers in GREGS' order, then FS_BASE (sigframe._GREGS_FS) */
static int GREGS_FS[19] = {
    UC_X86_REG_R8, UC_X86_REG_R9, UC_X86_REG_R10, UC_X86_REG_R11, UC_X86_REG_R12, UC_X86_REG_R13,
    UC_X86_REG_R14, UC_X86_REG_R15, UC_X86_REG_RDI, UC_X86_REG_RSI, UC_X86_REG_RBP, UC_X86_REG_RBX,
    UC_X86_REG_RDX, UC_X86_REG_RAX, UC_X86_REG_RCX, UC_X86_REG_RSP, UC_X86_REG_RIP, UC_X86_REG_EFLAGS,
    UC_X86_REG_FS_BASE};
/* sigframe._FX: FPCW FPSW FPTAG MXCSR XMM0-15 */
static int FX[20] = {UC_X86_REG_FPCW, UC_X86_REG_FPSW, UC_X86_REG_FPTAG, UC_X86_REG_MXCSR,
    UC_X86_REG_XMM0, UC_X86_REG_XMM1, UC_X86_REG_XMM2, UC_X86_REG_XMM3, UC_X86_REG_XMM4, UC_X86_REG_XMM5,
    UC_X86_REG_XMM6, UC_X86_REG_XMM7, UC_X86_REG_XMM8, UC_X86_REG_XMM9, UC_X86_REG_XMM10, UC_X86_REG_XMM11,
    UC_X86_REG_XMM12, UC_X86_REG_XMM13, UC_X86_REG_XMM14, UC_X86_REG_XMM15};
/* sigframe._FX_RESTORE: FPCW FPSW MXCSR XMM0-15 */
static int FX_RESTORE[19];
/* the NULL-fpstate reset: FPCW MXCSR XMM0-15 */
static int FX_NULL[18];
/* sigframe._HANDLER_ENTRY */
static int HANDLER_ENTRY[7] = {UC_X86_REG_RSP, UC_X86_REG_RIP, UC_X86_REG_RDI, UC_X86_REG_RSI, UC_X86_REG_RDX,
    UC_X86_REG_RAX, UC_X86_REG_EFLAGS};

static void *slots(uint8_t *buf, void **ptrs, int n) {
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

static int ready(void) {
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

static PyObject *u64_tuple(const uint64_t *v, int n) {
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

/* setup_frame(uch, use_alt, alt_top, ss_sp, ss_flags, ss_size, restorer, handler, blocked, signo, code, pid,
 *             uid, status, has_addr, addr, trapno, err)
 * -> (frame, fpstate, vals, fs_base, xmm, mxcsr), or an int uc_err. setup_rt_frame with xsave=None. */
static PyObject *n_setup_frame(PyObject *self, PyObject *args) {
    unsigned long long uch, alt_top, ss_sp, ss_size, restorer, handler, blocked, addr, trapno, err;
    int use_alt, ss_flags, signo, code, pid, uid, status, has_addr;
    if (!PyArg_ParseTuple(args, "KpKKiKKKKiiiiipKKK", &uch, &use_alt, &alt_top, &ss_sp, &ss_flags, &ss_size,
                          &restorer, &handler, &blocked, &signo, &code, &pid, &uid, &status, &has_addr, &addr,
                          &trapno, &err))
        return NULL;
    if (!ready())
        return NULL;
    uc_engine *uc = (uc_engine *)(uintptr_t)uch;
    uint8_t rbuf[16 * 20];
    void *ptrs[20];
    uint64_t vals[19];
    memset(rbuf, 0, 16 * 19);
    if (p_reg_read_batch(uc, GREGS_FS, slots(rbuf, ptrs, 19), 19))
        return PyErr_Format(PyExc_RuntimeError, "uc_reg_read_batch failed");
    for (int i = 0; i < 19; i++)
        vals[i] = get64(rbuf, 16 * i);
    uint64_t sp = use_alt ? alt_top : vals[15] - REDZONE;
    uint64_t fpstate = (sp - FXSAVE_SIZE) & ~63ULL;
    uint64_t frame = ((fpstate - FRAME_SIZE) & ~15ULL) - 8;

    /* the FXSAVE image (sigframe._fxsave_image) */
    uint8_t fx[FXSAVE_SIZE];
    memset(rbuf, 0, 16 * 20);
    if (p_reg_read_batch(uc, FX, slots(rbuf, ptrs, 20), 20))
        return PyErr_Format(PyExc_RuntimeError, "uc_reg_read_batch failed");
    uint64_t fcw = get64(rbuf, 0), fsw = get64(rbuf, 16), ftw = get64(rbuf, 32), mxcsr = get64(rbuf, 48);
    unsigned abridged = 0;
    for (int i = 0; i < 8; i++)
        if (((ftw >> (2 * i)) & 3) != 3)
            abridged |= 1u << i;
    memset(fx, 0, sizeof fx);
    put16(fx, 0, (uint16_t)fcw);
    put16(fx, 2, (uint16_t)fsw);
    fx[4] = (uint8_t)abridged;
    put32(fx, 24, (uint32_t)mxcsr);
    put32(fx, 28, 0xFFFF);
    memcpy(fx + 160, rbuf + 64, 256);

    /* the rt_sigframe (sigframe._frame_struct) */
    uint8_t b[FRAME_SIZE];
    memset(b, 0, sizeof b);
    put64(b, PRETCODE, restorer);
    put64(b, UC_FLAGS, UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS);
    put64(b, UC_STACK, ss_sp);
    put32(b, UC_STACK + 8, (uint32_t)ss_flags);
    put64(b, UC_STACK + 16, ss_size);
    for (int i = 0; i < NGREGS_MC; i++)
        put64(b, MCONTEXT + 8 * i, vals[i]);
    put16(b, CSGSFS, USER_CS);
    put16(b, CSGSFS + 6, USER_SS);
    put64(b, ERR, err);
    put64(b, TRAPNO, trapno);
    put64(b, CR2, has_addr ? addr : 0);
    put64(b, FPSTATE_PTR, fpstate);
    put64(b, UC_SIGMASK, blocked);
    put32(b, SIGINFO, (uint32_t)signo);
    put32(b, SIGINFO + 8, (uint32_t)code);
    if (has_addr) {
        put64(b, SIGINFO + 16, addr);
    } else {
        put32(b, SIGINFO + 16, (uint32_t)pid);
        put32(b, SIGINFO + 20, (uint32_t)uid);
        put32(b, SIGINFO + 24, (uint32_t)status);
    }
    uc_err e = p_mem_write(uc, fpstate, fx, FXSAVE_SIZE);
    if (!e)
        e = p_mem_write(uc, frame, b, FRAME_SIZE);
    if (e)
        return PyLong_FromLong(e);
    uint64_t entry[7] = {frame, handler, (uint64_t)(int64_t)signo, frame + SIGINFO, frame + UC, 0,
                         vals[17] & ~ENTRY_CLEAR};
    uint8_t wbuf[16 * 7];
    memset(wbuf, 0, sizeof wbuf);
    for (int i = 0; i < 7; i++)
        put64(wbuf, 16 * i, entry[i]);
    if (p_reg_write_batch(uc, HANDLER_ENTRY, slots(wbuf, ptrs, 7), 7))
        return PyErr_Format(PyExc_RuntimeError, "uc_reg_write_batch failed");

    PyObject *vt = u64_tuple(vals, 18);
    if (!vt)
        return NULL;
    return Py_BuildValue("(KKNKy#K)", (unsigned long long)frame, (unsigned long long)fpstate, vt,
                         (unsigned long long)vals[18], (const char *)rbuf + 64, (Py_ssize_t)256,
                         (unsigned long long)mxcsr);
}

/* restore_frame(uch) -> (vals, sigmask, fpstate) or an int uc_err: restore_rt_frame with xcr0 = 0 (the caller
 * takes the Python path for a frame that may carry an XSAVE area). */
static PyObject *n_restore_frame(PyObject *self, PyObject *args) {
    unsigned long long uch;
    if (!PyArg_ParseTuple(args, "K", &uch))
        return NULL;
    if (!ready())
        return NULL;
    uc_engine *uc = (uc_engine *)(uintptr_t)uch;
    uint8_t rbuf[16 * 19];
    void *ptrs[19];
    int ids[2] = {UC_X86_REG_RSP, UC_X86_REG_EFLAGS};
    memset(rbuf, 0, 32);
    if (p_reg_read_batch(uc, ids, slots(rbuf, ptrs, 2), 2))
        return PyErr_Format(PyExc_RuntimeError, "uc_reg_read_batch failed");
    uint64_t frame = get64(rbuf, 0) - 8, eflags = get64(rbuf, 16);
    uint8_t b[FRAME_SIZE];
    uc_err e = p_mem_read(uc, frame, b, FRAME_SIZE);
    if (e)
        return PyLong_FromLong(e);
    uint64_t vals[NGREGS_MC];
    for (int i = 0; i < NGREGS_MC; i++)
        vals[i] = get64(b, MCONTEXT + 8 * i);
    vals[17] = (eflags & ~FIX_EFLAGS) | (vals[17] & FIX_EFLAGS);
    uint64_t fpstate = get64(b, FPSTATE_PTR), sigmask = get64(b, UC_SIGMASK);
    memset(rbuf, 0, sizeof rbuf);
    for (int i = 0; i < NGREGS_MC; i++)
        put64(rbuf, 16 * i, vals[i]);
    if (p_reg_write_batch(uc, GREGS_FS, slots(rbuf, ptrs, NGREGS_MC), NGREGS_MC))
        return PyErr_Format(PyExc_RuntimeError, "uc_reg_write_batch failed");
    memset(rbuf, 0, sizeof rbuf);
    if (fpstate) {
        uint8_t fx[FXSAVE_SIZE];
        e = p_mem_read(uc, fpstate, fx, FXSAVE_SIZE);
        if (e)
            return PyLong_FromLong(e);
        put64(rbuf, 0, get16(fx, 0));
        put64(rbuf, 16, get16(fx, 2));
        put64(rbuf, 32, get32(fx, 24));
        memcpy(rbuf + 48, fx + 160, 256);
        if (p_reg_write_batch(uc, FX_RESTORE, slots(rbuf, ptrs, 19), 19))
            return PyErr_Format(PyExc_RuntimeError, "uc_reg_write_batch failed");
    } else {                                  /* NULL fpstate: FPCW, MXCSR and XMM0-15 at their init state */
        put64(rbuf, 0, 0x37F);
        put64(rbuf, 16, 0x1F80);
        if (p_reg_write_batch(uc, FX_NULL, slots(rbuf, ptrs, 18), 18))
            return PyErr_Format(PyExc_RuntimeError, "uc_reg_write_batch failed");
    }
    PyObject *vt = u64_tuple(vals, NGREGS_MC);
    if (!vt)
        return NULL;
    return Py_BuildValue("(NKK)", vt, (unsigned long long)sigmask, (unsigned long long)fpstate);
}

/* --- regbatch.py's one-register and memory calls (mirrors read_reg, read_u64, mem_read, mem_write) ------
 * Called with the Uc object itself, so the Python callers bind these functions in place of regbatch's and no
 * Python frame stands between them and Unicorn. */
static uc_engine *handle(PyObject *uc) {
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

static PyObject *uc_error(uc_err e) {
    PyObject *x = PyObject_CallFunction(UcError, "i", (int)e);
    if (x) {
        PyErr_SetObject(UcError, x);
        Py_DECREF(x);
    }
    return NULL;
}

static int nargs(Py_ssize_t n, Py_ssize_t want, const char *name) {
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

/* --- hooks with a C callback that calls the Python one (mirrors the binding's hook_add/uccallback) --------
 * The binding's path per call: libffi's closure converts the arguments, then two Python frames (uccallback's
 * wrapper and __hook_code_cb) before the callback. Here: one C call and the callback. As in the binding, an
 * exception is kept in uc._hook_exception (the first one) and the run stopped; Uc.emu_start raises it. The
 * record (the Uc, the callback, its data) lives in uc._callbacks[handle], so uc.hook_del(handle) frees it. */
typedef struct {
    PyObject *uc, *cb, *data;
} HookRec;

/* the callback's exception: kept in uc._hook_exception (the first one) and the run stopped, as uccallback */
static void hook_failed(HookRec *h, uc_engine *uc) {
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    if (tb && v)
        PyException_SetTraceback(v, tb);
    PyObject *old = PyObject_GetAttr(h->uc, s_hook_exception);
    if (old == Py_None && v)
        PyObject_SetAttr(h->uc, s_hook_exception, v);
    Py_XDECREF(old);
    PyErr_Clear();
    Py_XDECREF(t);
    Py_XDECREF(v);
    Py_XDECREF(tb);
    p_emu_stop(uc);
}

/* callback(uc, x, y, data) (x, y NULL: callback(uc, data); y NULL: callback(uc, x, data)); steals x and y */
static void call_back(HookRec *h, uc_engine *uc, PyObject *x, PyObject *y, int nx) {
    PyObject *r = NULL;
    if (nx == 0 || (x && (nx == 1 || y))) {
        PyObject *args[4] = {h->uc, x, y, h->data};
        if (nx == 1)
            args[2] = h->data;
        else if (nx == 0)
            args[1] = h->data;
        r = PyObject_Vectorcall(h->cb, args, 2 + nx, NULL);
    }
    Py_XDECREF(x);
    Py_XDECREF(y);
    if (r)
        Py_DECREF(r);
    else
        hook_failed(h, uc);
}

static void code_cb(uc_engine *uc, uint64_t addr, uint32_t size, void *user) {
    PyGILState_STATE g = PyGILState_Ensure();
    call_back((HookRec *)user, uc, PyLong_FromUnsignedLongLong(addr), PyLong_FromUnsignedLong(size), 2);
    PyGILState_Release(g);
}

static void syscall_cb(uc_engine *uc, void *user) {
    PyGILState_STATE g = PyGILState_Ensure();
    call_back((HookRec *)user, uc, NULL, NULL, 0);
    PyGILState_Release(g);
}

static void intr_cb(uc_engine *uc, uint32_t intno, void *user) {
    PyGILState_STATE g = PyGILState_Ensure();
    call_back((HookRec *)user, uc, PyLong_FromUnsignedLong(intno), NULL, 1);
    PyGILState_Release(g);
}

static void hookrec_free(PyObject *capsule) {
    HookRec *h = (HookRec *)PyCapsule_GetPointer(capsule, "preemu.hook");
    if (h) {
        Py_XDECREF(h->uc);
        Py_XDECREF(h->cb);
        Py_XDECREF(h->data);
        PyMem_Free(h);
    }
}

enum { HOOK_CODE = 0, HOOK_SYSCALL = 1, HOOK_INTR = 2 };

/* hook_add(uc, kind, callback, user_data, begin, end) -> handle (uc.hook_del deletes it); kind: 0 a code hook,
 * 1 the SYSCALL instruction's hook, 2 the interrupt hook */
static PyObject *n_hook_add(PyObject *self, PyObject *args) {
    PyObject *ucobj, *cb, *data;
    int kind;
    unsigned long long begin, end;
    if (!PyArg_ParseTuple(args, "OiOOKK", &ucobj, &kind, &cb, &data, &begin, &end) || !ready())
        return NULL;
    if (kind < HOOK_CODE || kind > HOOK_INTR)
        return PyErr_Format(PyExc_ValueError, "hook kind %d", kind);
    uc_engine *uc = handle(ucobj);
    if (!uc)
        return NULL;
    PyObject *table = PyObject_GetAttrString(ucobj, "_callbacks");
    if (!table)
        return NULL;
    HookRec *h = PyMem_Malloc(sizeof *h);
    if (!h) {
        Py_DECREF(table);
        return PyErr_NoMemory();
    }
    Py_INCREF(ucobj);
    Py_INCREF(cb);
    Py_INCREF(data);
    *h = (HookRec){ucobj, cb, data};
    PyObject *capsule = PyCapsule_New(h, "preemu.hook", hookrec_free);
    if (!capsule) {
        Py_DECREF(ucobj);
        Py_DECREF(cb);
        Py_DECREF(data);
        PyMem_Free(h);
        Py_DECREF(table);
        return NULL;
    }
    uc_hook hh = 0;
    uc_err e;
    if (kind == HOOK_CODE)
        e = p_hook_add(uc, &hh, UC_HOOK_CODE, (void *)code_cb, h, begin, end);
    else if (kind == HOOK_SYSCALL)
        e = p_hook_add(uc, &hh, UC_HOOK_INSN, (void *)syscall_cb, h, begin, end, UC_X86_INS_SYSCALL);
    else
        e = p_hook_add(uc, &hh, UC_HOOK_INTR, (void *)intr_cb, h, begin, end);
    if (e) {
        Py_DECREF(capsule);
        Py_DECREF(table);
        return uc_error(e);
    }
    PyObject *key = PyLong_FromSize_t((size_t)hh);
    int bad = !key || PyObject_SetItem(table, key, capsule) < 0;
    Py_DECREF(capsule);
    Py_DECREF(table);
    if (bad) {
        Py_XDECREF(key);
        return NULL;
    }
    return key;
}

/* emu_start(uc, begin, until, timeout, count): Uc.emu_start (the binding's), without its argument conversion */
static PyObject *n_emu_start(PyObject *self, PyObject *const *a, Py_ssize_t n) {
    if (!nargs(n, 5, "emu_start"))
        return NULL;
    uc_engine *uc = handle(a[0]);
    uint64_t begin = PyLong_AsUnsignedLongLongMask(a[1]), until = PyLong_AsUnsignedLongLongMask(a[2]);
    uint64_t timeout = PyLong_AsUnsignedLongLongMask(a[3]), count = PyLong_AsUnsignedLongLongMask(a[4]);
    if (!uc || PyErr_Occurred())
        return NULL;
    if (PyObject_SetAttr(a[0], s_hook_exception, Py_None) < 0)
        return NULL;
    uc_err e;
    Py_BEGIN_ALLOW_THREADS
    e = p_emu_start(uc, begin, until, timeout, (size_t)count);
    Py_END_ALLOW_THREADS
    if (e)
        return uc_error(e);
    PyObject *exc = PyObject_GetAttr(a[0], s_hook_exception);
    if (!exc)
        return NULL;
    if (exc != Py_None) {
        PyErr_SetObject(PyExceptionInstance_Class(exc), exc);
        Py_DECREF(exc);
        return NULL;
    }
    Py_DECREF(exc);
    Py_RETURN_NONE;
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

/* --- icount.InsnCounter's questions inside a code hook (mirrors _index, stopping, at) -------------------
 * The counter's state is the _Counter struct at `c` (icount.py: executed, limit, stop, pending, blk_addr,
 * blk_size, ...); the current block's instruction addresses come from `blocks` ((addr, size) -> list), or from
 * insns(addr, size) (icount's _insns, which decodes) when the block is not there. */
typedef struct {
    uint64_t executed, limit, stop, pending, blk_addr, blk_size;
} CounterHead;

static int counter_index(PyObject *const *a, const CounterHead **head, Py_ssize_t *index) {
    const CounterHead *c = (const CounterHead *)PyLong_AsVoidPtr(a[0]);
    uint64_t pc = PyLong_AsUnsignedLongLongMask(a[3]);
    if (PyErr_Occurred())
        return 0;
    PyObject *k0 = PyLong_FromUnsignedLongLong(c->blk_addr), *k1 = PyLong_FromUnsignedLongLong(c->blk_size);
    PyObject *key = (k0 && k1) ? PyTuple_Pack(2, k0, k1) : NULL;
    Py_XDECREF(k0);
    Py_XDECREF(k1);
    if (!key)
        return 0;
    PyObject *list = PyDict_GetItemWithError(a[1], key);        /* borrowed */
    Py_DECREF(key);
    if (list) {
        Py_INCREF(list);
    } else {
        if (PyErr_Occurred())
            return 0;
        list = PyObject_CallFunction(a[2], "KK", (unsigned long long)c->blk_addr, (unsigned long long)c->blk_size);
        if (!list)
            return 0;
    }
    PyObject *seq = PySequence_Fast(list, "insns");
    Py_DECREF(list);
    if (!seq)
        return 0;
    Py_ssize_t lo = 0, hi = PySequence_Fast_GET_SIZE(seq);     /* bisect.bisect_left */
    PyObject **items = PySequence_Fast_ITEMS(seq);
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        uint64_t v = PyLong_AsUnsignedLongLongMask(items[mid]);
        if (v < pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    Py_DECREF(seq);
    if (PyErr_Occurred())
        return 0;
    *head = c;
    *index = lo;
    return 1;
}

/* counter_stopping(c, blocks, insns, pc) -> InsnCounter.stopping(pc) */
static PyObject *n_counter_stopping(PyObject *self, PyObject *const *a, Py_ssize_t n) {
    const CounterHead *c;
    Py_ssize_t i;
    if (n != 4) {
        PyErr_SetString(PyExc_TypeError, "counter_stopping takes 4 arguments");
        return NULL;
    }
    if (!counter_index(a, &c, &i))
        return NULL;
    return PyBool_FromLong(c->executed + (uint64_t)i >= c->limit);
}

/* counter_at(c, blocks, insns, pc) -> InsnCounter.at(pc) */
static PyObject *n_counter_at(PyObject *self, PyObject *const *a, Py_ssize_t n) {
    const CounterHead *c;
    Py_ssize_t i;
    if (n != 4) {
        PyErr_SetString(PyExc_TypeError, "counter_at takes 4 arguments");
        return NULL;
    }
    if (!counter_index(a, &c, &i))
        return NULL;
    return PyLong_FromUnsignedLongLong(c->executed + (uint64_t)i + 1);
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
    {"mem_read", (PyCFunction)(void (*)(void))n_mem_read, METH_FASTCALL, "regbatch.mem_read"},
    {"mem_write", (PyCFunction)(void (*)(void))n_mem_write, METH_FASTCALL, "regbatch.mem_write"},
    {"init", n_init, METH_VARARGS,
     "init(reg_read_batch, reg_write_batch, mem_read, mem_write, reg_read, UcError): libunicorn's addresses"},
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
    if (!s_uch || !s_value || !s_hook_exception)
        return NULL;
    FX_RESTORE[0] = UC_X86_REG_FPCW;
    FX_RESTORE[1] = UC_X86_REG_FPSW;
    FX_RESTORE[2] = UC_X86_REG_MXCSR;
    FX_NULL[0] = UC_X86_REG_FPCW;
    FX_NULL[1] = UC_X86_REG_MXCSR;
    for (int i = 0; i < 16; i++) {
        FX_RESTORE[3 + i] = FX[4 + i];
        FX_NULL[2 + i] = FX[4 + i];
    }
    return PyModule_Create(&module);
}
