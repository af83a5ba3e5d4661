/* emu.engine._native, part: the rt_sigframe (issue #49).
 *
 * Mirrors emu/linux/sigframe.py's setup_rt_frame and restore_rt_frame for a frame without an XSAVE area
 * (--cpu v1/v2: the FXSAVE image alone), which in turn mirror arch/x86/kernel/signal.c (get_sigframe),
 * signal_64.c (x64_setup_rt_frame, restore_sigcontext) and struct rt_sigframe. The Python functions stay the
 * reference and the path at --cpu v3/v4 and under PREEMU_NATIVE=0; tests/test_native.py compares the two byte
 * for byte and register for register. A Unicorn error of a memory access is returned as the int uc_err (the
 * caller raises UcError where the Python path's mem_write/mem_read raise it).
 */
#include "_native.h"

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

/* setup_frame(uch, use_alt, alt_top, ss_sp, ss_flags, ss_size, restorer, handler, blocked, signo, code, pid,
 *             uid, status, has_addr, addr, trapno, err)
 * -> (frame, fpstate, vals, fs_base, xmm, mxcsr), or an int uc_err. setup_rt_frame with xsave=None. */
PyObject *n_setup_frame(PyObject *self, PyObject *args) {
    unsigned long long uch, alt_top, ss_sp, ss_size, restorer, handler, blocked, addr, trapno, err;
    int use_alt, ss_flags, signo, code, status, has_addr;
    unsigned int pid, uid;                    /* si_pid, si_uid: "I" in sigframe.py's struct */
    if (!PyArg_ParseTuple(args, "KpKKiKKKKiiIIipKKK", &uch, &use_alt, &alt_top, &ss_sp, &ss_flags, &ss_size,
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
        put32(b, SIGINFO + 16, pid);
        put32(b, SIGINFO + 20, uid);
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
PyObject *n_restore_frame(PyObject *self, PyObject *args) {
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

void sigframe_init(void) {
    FX_RESTORE[0] = UC_X86_REG_FPCW;
    FX_RESTORE[1] = UC_X86_REG_FPSW;
    FX_RESTORE[2] = UC_X86_REG_MXCSR;
    FX_NULL[0] = UC_X86_REG_FPCW;
    FX_NULL[1] = UC_X86_REG_MXCSR;
    for (int i = 0; i < 16; i++) {
        FX_RESTORE[3 + i] = FX[4 + i];
        FX_NULL[2 + i] = FX[4 + i];
    }
}
