"""output: what users and programs read: text, JSON, JUnit XML, SARIF, timelines.

report renders `.s` sweeps, scenarios and check-stub (and the --json schemas); exec_report a whole
program's run (text, JSON, Perfetto); realsweep_report the real-program sweep; timeline the
scheduler's Chrome trace and SVG; junit and sarif the CI formats. Renderers take results; they run
nothing.

May import: core, front, check, model, linux (layer 5).
"""
