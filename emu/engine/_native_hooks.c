/* emu.engine._native, part: hooks, engine runs and the instruction counter (issue #49).
 *
 * Mirrors the Python binding's hook_add/uccallback and Uc.emu_start (unicorn/unicorn_py3/unicorn.py),
 * emu/linux/icount.py's InsnCounter._index, stopping and at, and the first test of emu/linux/gclock.py's
 * GoroutineClock._on_store (which stores to the TLS g slot it need not see). emu/engine/native.py selects these or the binding's
 * own (PREEMU_NATIVE=0); tests/test_native.py runs both.
 */
#include "_native.h"

/* --- hooks with a C callback that calls the Python one (mirrors the binding's hook_add/uccallback) --------
 * The binding's path per call: libffi's closure converts the arguments, then two Python frames (uccallback's
 * wrapper and __hook_code_cb) before the callback. Here: one C call and the callback. As in the binding, an
 * exception is kept in uc._hook_exception (the first one) and the run stopped; Uc.emu_start raises it. The
 * record (the Uc, the callback, its data) lives in uc._callbacks[handle], so uc.hook_del(handle) frees it; it is
 * a GC-tracked object, so the cycle Uc -> _callbacks -> record -> callback's owner -> Uc is collected, as the
 * binding's own closures are. */
typedef struct {
    PyObject_HEAD
    PyObject *uc, *cb, *data;
    PyObject *clock, *proc;             /* a g-store hook's GoroutineClock and Process (else NULL) */
    int reg;                            /* a g-store hook's source register, or -1: the immediate */
    uint64_t imm;
} HookRec;

static int hookrec_traverse(HookRec *h, visitproc visit, void *arg) {
    Py_VISIT(h->uc);
    Py_VISIT(h->cb);
    Py_VISIT(h->data);
    Py_VISIT(h->clock);
    Py_VISIT(h->proc);
    return 0;
}

static int hookrec_clear(HookRec *h) {
    Py_CLEAR(h->uc);
    Py_CLEAR(h->cb);
    Py_CLEAR(h->data);
    Py_CLEAR(h->clock);
    Py_CLEAR(h->proc);
    return 0;
}

static void hookrec_dealloc(HookRec *h) {
    PyObject_GC_UnTrack(h);
    hookrec_clear(h);
    PyObject_GC_Del(h);
}

static PyTypeObject HookRecType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "emu.engine._native.Hook",
    .tp_basicsize = sizeof(HookRec),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "a hook's Uc, callback and user data (kept in uc._callbacks)",
    .tp_traverse = (traverseproc)hookrec_traverse,
    .tp_clear = (inquiry)hookrec_clear,
    .tp_dealloc = (destructor)hookrec_dealloc,
};

int hooks_init(void) {
    return PyType_Ready(&HookRecType);
}

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
    if (!h->cb) {                             /* cleared by the GC with its Uc: nothing left to call */
        Py_XDECREF(x);
        Py_XDECREF(y);
        return;
    }
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

/* --- the goroutine clock's hook on a store to the TLS g slot (mirrors gclock.GoroutineClock._on_store's
 * first test) ------------------------------------------------------------------------------------------
 * _on_store acts only when G's instructions are being counted on this thread (clock.tid is not None: inside a
 * slice it is the current thread's or None) or when the store makes G current outside an injection window
 * and a signal handler (new == clock.g, not clock.held, not proc.cur.frames). Every other store leaves
 * everything as it was, so this callback returns at once for them; the others call _on_store, which decides
 * (PREEMU_NATIVE=0: every store calls it). A failed attribute read calls it too: it raises the same way. */
static int g_store_ignored(HookRec *h, uc_engine *uc) {
    uint64_t v = h->imm, buf[8] = {0};
    if (h->reg >= 0) {
        if (p_reg_read(uc, h->reg, buf))
            return 0;
        v = buf[0];
    }
    PyObject *tid = PyObject_GetAttr(h->clock, s_tid);
    if (!tid)
        goto fail;
    Py_DECREF(tid);
    if (tid != Py_None)
        return 0;                           /* counting on this thread: _on_store decides */
    PyObject *g = PyObject_GetAttr(h->clock, s_g);
    if (!g)
        goto fail;
    uint64_t gv = PyLong_AsUnsignedLongLongMask(g);
    Py_DECREF(g);
    if (PyErr_Occurred())
        goto fail;
    if (v != gv)
        return 1;                           /* another g becomes current: nothing to count */
    PyObject *held = PyObject_GetAttr(h->clock, s_held);
    int hv = held ? PyObject_IsTrue(held) : -1;
    Py_XDECREF(held);
    if (hv < 0)
        goto fail;
    if (hv)
        return 1;                           /* inside an injection's asyncPreempt window */
    PyObject *cur = PyObject_GetAttr(h->proc, s_cur);
    PyObject *frames = cur ? PyObject_GetAttr(cur, s_frames) : NULL;
    Py_XDECREF(cur);
    int fv = frames ? PyObject_IsTrue(frames) : -1;
    Py_XDECREF(frames);
    if (fv < 0)
        goto fail;
    return fv;                              /* a signal handler's setg: not G's own code */
fail:
    PyErr_Clear();                          /* _on_store reads the same attributes and raises */
    return 0;
}

static void g_store_cb(uc_engine *uc, uint64_t addr, uint32_t size, void *user) {
    HookRec *h = (HookRec *)user;
    PyGILState_STATE g = PyGILState_Ensure();
    if (!h->cb || !g_store_ignored(h, uc))
        call_back(h, uc, PyLong_FromUnsignedLongLong(addr), PyLong_FromUnsignedLong(size), 2);
    PyGILState_Release(g);
}

enum { HOOK_CODE = 0, HOOK_SYSCALL = 1, HOOK_INTR = 2, HOOK_G_STORE = 3 };

/* hook_add(uc, kind, callback, user_data, begin, end[, clock, proc, reg, imm]) -> handle (uc.hook_del deletes
 * it); kind: 0 a code hook, 1 the SYSCALL instruction's hook, 2 the interrupt hook, 3 a code hook on a store to
 * the TLS g slot (g_store_cb: clock, proc, the source register or -1 and the immediate) */
PyObject *n_hook_add(PyObject *self, PyObject *args) {
    PyObject *ucobj, *cb, *data, *clock = NULL, *proc = NULL;
    int kind, reg = -1;
    unsigned long long begin, end, imm = 0;
    if (!PyArg_ParseTuple(args, "OiOOKK|OOiK", &ucobj, &kind, &cb, &data, &begin, &end, &clock, &proc, &reg, &imm)
        || !ready())
        return NULL;
    if (kind < HOOK_CODE || kind > HOOK_G_STORE)
        return PyErr_Format(PyExc_ValueError, "hook kind %d", kind);
    if ((kind == HOOK_G_STORE) != (clock != NULL && proc != NULL))
        return PyErr_Format(PyExc_TypeError, "a g-store hook (kind 3), and only it, takes clock and proc");
    uc_engine *uc = handle(ucobj);
    if (!uc)
        return NULL;
    PyObject *table = PyObject_GetAttrString(ucobj, "_callbacks");
    if (!table)
        return NULL;
    HookRec *h = PyObject_GC_New(HookRec, &HookRecType);
    if (!h) {
        Py_DECREF(table);
        return NULL;
    }
    Py_INCREF(ucobj);
    Py_INCREF(cb);
    Py_INCREF(data);
    h->uc = ucobj;
    h->cb = cb;
    h->data = data;
    Py_XINCREF(clock);
    Py_XINCREF(proc);
    h->clock = clock;
    h->proc = proc;
    h->reg = reg;
    h->imm = imm;
    PyObject_GC_Track(h);
    PyObject *rec = (PyObject *)h;
    uc_hook hh = 0;
    uc_err e;
    if (kind == HOOK_CODE)
        e = p_hook_add(uc, &hh, UC_HOOK_CODE, (void *)code_cb, h, begin, end);
    else if (kind == HOOK_G_STORE)
        e = p_hook_add(uc, &hh, UC_HOOK_CODE, (void *)g_store_cb, h, begin, end);
    else if (kind == HOOK_SYSCALL)
        e = p_hook_add(uc, &hh, UC_HOOK_INSN, (void *)syscall_cb, h, begin, end, UC_X86_INS_SYSCALL);
    else
        e = p_hook_add(uc, &hh, UC_HOOK_INTR, (void *)intr_cb, h, begin, end);
    if (e) {
        Py_DECREF(rec);
        Py_DECREF(table);
        return uc_error(e);
    }
    PyObject *key = PyLong_FromSize_t((size_t)hh);
    int bad = !key || PyObject_SetItem(table, key, rec) < 0;
    Py_DECREF(rec);
    Py_DECREF(table);
    if (bad) {
        Py_XDECREF(key);
        return NULL;
    }
    return key;
}

/* emu_start(uc, begin, until, timeout, count): Uc.emu_start (the binding's), without its argument conversion */
PyObject *n_emu_start(PyObject *self, PyObject *const *a, Py_ssize_t n) {
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
PyObject *n_counter_stopping(PyObject *self, PyObject *const *a, Py_ssize_t n) {
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
PyObject *n_counter_at(PyObject *self, PyObject *const *a, Py_ssize_t n) {
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
