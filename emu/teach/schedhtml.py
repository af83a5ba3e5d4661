"""`preemu explain PROGRAM --schedule SEED --html OUT.html`: one PCT schedule's run as a self-contained page (inline
CSS, JS and SVG; no network), built as html.py builds the preemption page: the page embeds the JSON that `--json`
prints (schedstory.to_json) and draws it in the browser.

What it shows: a lane per thread (an M) on one axis, the run's steps (the schedule's clock: a slice that ran no
step of the program's own code is a thin tick) or its virtual time (the CPUs side by side: two lanes' slices
overlap), switched with a button or the `t` key; each slice a bar, dark when it ran the program's own code,
grey when only the runtime's or the library's; the change points (the decisions that mattered) as numbered red
markers on the lane of the thread they stopped, the fairness demotions as small orange ticks, the end of the run
as a black one. Clicking a marker or a decision in the list (or the arrow keys) selects it: the lane, the
marker and the chapter that led to it are highlighted and the panel shows the source line. Below: the chapters
thread by thread, how the run ended, the command that replays it. Left out: zooming, the goroutines.
"""
from __future__ import annotations

from .html import page
from .schedstory import to_json


def render(story) -> str:
    """Return the page for `story` (a schedstory.Story)."""
    test = f" --{story.test[0]} {story.test[1]}" if story.test else ""
    title = f"preemu explain: {story.target}{test} --schedule {story.seed} --depth {story.depth}"
    return page(_PAGE, title, to_json(story), _CSS, _JS)


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>@@TITLE@@</title>
<style>@@CSS@@</style>
</head>
<body>
<header>
  <h1>@@TITLE@@</h1>
  <span id="verdict" class="badge"></span>
  <div id="summary" class="summary"></div>
</header>
<main>
  <section aria-label="threads on a time axis">
    <div class="bar">
      <button id="axis" type="button" title="switch the axis (t)">axis: steps</button>
      <button id="prev" type="button" title="previous decision (Left arrow)">&#x25C0; decision</button>
      <button id="next" type="button" title="next decision (Right arrow)">decision &#x25B6;</button>
      <span class="legend"><i class="k user"></i> ran the program's own code <i class="k rt"></i> runtime/library
      only <i class="k cp"></i> change point <i class="k fair"></i> fairness demotion <i class="k end"></i> the end</span>
    </div>
    <div id="lanes"></div>
    <div id="detail" class="detail" aria-live="polite"></div>
  </section>
  <section class="cols">
    <div>
      <h2>The decisions that mattered</h2>
      <ol id="decisions"></ol>
      <h2 id="end-title">How it ended</h2>
      <div id="failure"></div>
      <p class="replay">replay: <code id="replay"></code></p>
    </div>
    <div>
      <h2>Thread by thread</h2>
      <div id="chapters"></div>
    </div>
  </section>
</main>
<script id="story" type="application/json">@@DATA@@</script>
<script>@@JS@@</script>
</body>
</html>
"""

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d232b;background:#f6f7f9}
header{padding:10px 18px;background:#fff;border-bottom:1px solid #d7dbe0}
h1{font-size:17px;display:inline;margin-right:12px} h2{font-size:15px;margin:14px 0 6px}
.badge{padding:2px 9px;border-radius:10px;font-weight:600}
.badge.bad{background:#fde2e1;color:#a3140c} .badge.ok{background:#dff3e3;color:#17652c}
.summary{color:#4a5561;margin-top:4px}
main{padding:8px 18px}
.bar{display:flex;gap:8px;align-items:center;margin:6px 0}
button{font:inherit;padding:3px 10px;border:1px solid #aab2bc;border-radius:4px;background:#fff;cursor:pointer}
.legend{color:#4a5561;font-size:12.5px}
.k{display:inline-block;width:12px;height:10px;margin:0 3px 0 10px;vertical-align:middle}
.k.user{background:#2f6db5}.k.rt{background:#b8c0ca}.k.cp{background:#d22}.k.fair{background:#e69b16}.k.end{background:#000}
#lanes{background:#fff;border:1px solid #d7dbe0;border-radius:4px;overflow-x:auto}
svg text{font:12px ui-monospace,monospace;fill:#1d232b}
rect.seg.user{fill:#2f6db5} rect.seg.rt{fill:#b8c0ca} rect.lane{fill:#fff} rect.lane.sel{fill:#fff4d6}
g.cp line{stroke:#d22;stroke-width:2} g.cp circle{fill:#d22} g.cp text{fill:#fff;font-weight:700}
g.cp.sel circle{fill:#8a0000;stroke:#ffcc00;stroke-width:3} g.cp{cursor:pointer}
line.fair{stroke:#e69b16;stroke-width:2} line.end{stroke:#000;stroke-width:2}
rect.span{fill:#ffe08a;opacity:.35}
.detail{margin:8px 0;padding:8px 12px;background:#fff;border-left:4px solid #d22;min-height:2.8em}
.detail code,.src{font:13px ui-monospace,monospace;background:#f1f3f5;padding:1px 4px}
.cols{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1.3fr);gap:24px}
#decisions li{margin:4px 0;cursor:pointer;padding:3px 6px;border-radius:4px} #decisions li.sel{background:#fff1c2}
#decisions li.fair{color:#6b5a2e;font-size:12.5px}
table{border-collapse:collapse;width:100%;background:#fff;margin-bottom:8px;font-size:12.5px}
td,th{border:1px solid #e1e4e8;padding:3px 6px;text-align:left;vertical-align:top} th{background:#f1f3f5}
.chapter.sel table{outline:3px solid #ffcc00}
.chapter h3{font-size:13px;margin:10px 0 4px}
pre{background:#fff;border:1px solid #d7dbe0;padding:8px;white-space:pre-wrap;margin:4px 0}
.replay code{font:13px ui-monospace,monospace}
"""

_JS = r"""
const S = JSON.parse(document.getElementById('story').textContent);
const $ = id => document.getElementById(id);
const NS = 'http://www.w3.org/2000/svg';
const el = (tag, attrs, parent, text) => {
  const e = document.createElementNS(NS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
};
const ms = ns => (ns / 1e6).toFixed(3) + ' ms';
const esc = s => String(s).replace(/[&<>"]/g, c => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'}[c]));
const cps = S.decisions.map((d, i) => [d, i]).filter(([d]) => d.kind === 'change-point');
let axis = 'steps', sel = -1;

$('verdict').textContent = S.ok ? 'passed' : 'FAILED: ' + S.failure.why;
$('verdict').className = 'badge ' + (S.ok ? 'ok' : 'bad');
$('summary').textContent = `schedule ${S.seed}, depth ${S.depth} (${S.depth - 1} change points and their partners among k = ${S.k} ` +
  `steps); ${S.instructions.toLocaleString('en')} instructions, ${ms(S.virtual_ns)} virtual, ${S.steps} steps, ` +
  `${S.segments.length} slices on ${S.threads.length} threads (a thread is an M: it runs whichever goroutine ` +
  `the Go scheduler gives it)`;
$('replay').textContent = S.replay;

function draw() {
  const box = $('lanes'); box.innerHTML = '';
  const W = Math.max(900, box.clientWidth - 2), left = 130, right = 60, top = 26, laneH = 34;
  const H = top + laneH * S.threads.length + 26;
  const svg = el('svg', {width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img'}, box);
  const span = axis === 'steps' ? Math.max(1, S.steps) : Math.max(1, S.virtual_ns);
  const X = v => left + (W - left - right) * v / span;
  const xs = sg => axis === 'steps' ? [X(sg.step_from), X(sg.step_to)] : [X(sg.start_ns), X(sg.end_ns)];
  const row = {};
  S.threads.forEach((t, i) => { row[t.tid] = i; });
  const dec = sel >= 0 ? S.decisions[sel] : null;
  // the chapter that led to the selected change point, shaded
  if (dec) {
    const ch = S.chapters.find(c => c.ends_with === sel);
    if (ch) {
      const segs = S.segments.slice(ch.segments[0], ch.segments[1] + 1);
      const a = Math.min(...segs.map(s => xs(s)[0])), b = Math.max(...segs.map(s => xs(s)[1]));
      el('rect', {class: 'span', x: a, y: top - 4, width: Math.max(2, b - a), height: laneH * S.threads.length + 8}, svg);
    }
  }
  S.threads.forEach((t, i) => {
    const y = top + i * laneH;
    el('rect', {class: 'lane' + (dec && dec.tid === t.tid ? ' sel' : ''), x: 0, y, width: W, height: laneH - 2,
                'data-tid': t.tid}, svg);
    el('text', {x: 8, y: y + laneH / 2 + 4}, svg, `${t.name} (${t.tid})`);
  });
  S.segments.forEach((sg, i) => {
    const [a, b] = xs(sg), y = top + row[sg.tid] * laneH + 7;
    const r = el('rect', {class: 'seg ' + (sg.step_to > sg.step_from ? 'user' : 'rt'), x: a, y,
                          width: Math.max(1.5, b - a), height: laneH - 16, 'data-seg': i, 'data-tid': sg.tid}, svg);
    el('title', {}, r, `${sg.thread}: ${sg.instructions.toLocaleString('en')} instructions, steps ${sg.step_from}..` +
       `${sg.step_to}, t = ${ms(sg.start_ns)}..${ms(sg.end_ns)}; then ${sg.then}${sg.where ? ' at ' + sg.where : ''}`);
  });
  const at = d => {
    const sg = S.segments[d.segment];
    return sg ? (axis === 'steps' ? X(d.kind === 'change-point' ? d.step : sg.step_to) : X(sg.end_ns)) : null;
  };
  S.decisions.forEach((d, i) => {
    const x = at(d); if (x === null || !(d.tid in row)) return;
    const y = top + row[d.tid] * laneH;
    if (d.kind === 'fair-demotion') {
      const l = el('line', {class: 'fair', x1: x, x2: x, y1: y + 3, y2: y + laneH - 5, 'data-decision': i}, svg);
      el('title', {}, l, `fairness: ${d.thread} demoted at ${d.where}`);
    }
  });
  cps.forEach(([d, i], n) => {
    const x = at(d); if (x === null) return;
    const y = top + row[d.tid] * laneH;
    const g = el('g', {class: 'cp' + (sel === i ? ' sel' : ''), 'data-decision': i, 'data-n': n + 1}, svg);
    el('line', {x1: x, x2: x, y1: top - 6, y2: top + laneH * S.threads.length}, g);
    el('circle', {cx: x, cy: y + laneH / 2 - 1, r: 9}, g);
    el('text', {x: x - 4, y: y + laneH / 2 + 3}, g, String(n + 1));
    el('title', {}, g, `change point ${n + 1}: ${d.thread} stopped before ${d.where}`);
    g.addEventListener('click', () => select(i));
  });
  const xe = X(axis === 'steps' ? S.steps : (S.failure.time_ns || S.virtual_ns));
  if (S.failure.by && S.failure.by.tid in row) {
    const y = top + row[S.failure.by.tid] * laneH;
    el('title', {}, el('line', {class: 'end', x1: xe, x2: xe, y1: y + 2, y2: y + laneH - 4}, svg),
       `the end: ${S.failure.why || 'exit status ' + S.failure.exit_code}`);
  }
  // the axis
  const ay = H - 10;
  el('line', {x1: left, x2: W - right, y1: ay - 10, y2: ay - 10, stroke: '#8894a0'}, svg);
  for (let k = 0; k <= 5; k++) {
    const v = span * k / 5, x = X(v);
    el('text', {x: x - 12, y: ay + 2}, svg, axis === 'steps' ? String(Math.round(v)) : ms(v));
  }
  el('text', {x: 8, y: ay + 2}, svg, axis === 'steps' ? 'step' : 'virtual time');
  el('text', {x: left, y: 16}, svg, axis === 'steps'
     ? 'x: steps (the program\u2019s own shared-memory accesses, in the order the schedule ran them)'
     : 'x: virtual time (the CPUs run side by side: slices of two lanes overlap)');
}

function select(i) {
  sel = i;
  document.querySelectorAll('#decisions li').forEach(li => li.classList.toggle('sel', +li.dataset.decision === i));
  document.querySelectorAll('.chapter').forEach(c => c.classList.toggle('sel', +c.dataset.endsWith === i));
  const d = S.decisions[i], n = cps.findIndex(([, j]) => j === i);
  $('detail').innerHTML = d ? `<b>${n >= 0 ? 'change point ' + (n + 1) : 'fairness demotion'}</b>, step ${d.step}, ` +
    `t = ${d.time_ns === null ? '?' : ms(d.time_ns)}: thread <b>${esc(d.thread)} (${d.tid})</b> ` +
    `${d.kind === 'change-point' ? 'stopped before' : 'demoted at'} <code>${esc(d.where)}</code>` +
    (d.source ? `<br><span class="src">${esc(d.file)}:${d.line}: ${esc(d.source)}</span>` : '') +
    (d.kind === 'change-point' ? `<br>its priority drops to ${d.priority}, below every thread\u2019s first one: the ` +
     'others run before it until they block or finish' : '') : '';
  draw();
}

function lists() {
  const ol = $('decisions');
  cps.forEach(([d, i], n) => {
    const li = document.createElement('li');
    li.dataset.decision = i;
    li.innerHTML = `step ${d.step}: <b>${esc(d.thread)} (${d.tid})</b> stopped before <code>${esc(d.where)}</code>` +
      (d.source ? `<br><span class="src">${esc(d.file)}:${d.line}: ${esc(d.source)}</span>` : '');
    li.addEventListener('click', () => select(i));
    ol.appendChild(li);
  });
  if (!cps.length) ol.outerHTML = '<p>No change point fell inside the run.</p>';
  const ch = $('chapters');
  S.chapters.forEach((c, k) => {
    const div = document.createElement('div');
    div.className = 'chapter';
    div.dataset.endsWith = c.ends_with === null ? -1 : c.ends_with;
    const a = k === 0 ? 'the start' : 'change point ' + k, b = c.ends_with === null ? 'the end' : 'change point ' + (k + 1);
    let h = `<h3>${a} \u2192 ${b}: steps ${c.step_from}..${c.step_to}, t = ${ms(c.from_ns)}..${ms(c.to_ns)}</h3>` +
      '<table><tr><th>thread</th><th>slices</th><th>instructions</th><th>steps</th><th>then</th></tr>';
    for (const t of c.threads)
      h += `<tr><td>${esc(t.thread)} (${t.tid})</td><td>${t.slices}</td><td>${t.instructions.toLocaleString('en')}` +
        `</td><td>${t.steps}</td><td>${esc(t.then)}${t.where ? ' at <code>' + esc(t.where) + '</code>' : ''}</td></tr>`;
    h += '</table>';
    for (const i of c.fair_demotions)
      h += `<div class="legend">fairness: ${esc(S.decisions[i].thread)} demoted at ${esc(S.decisions[i].where)}</div>`;
    div.innerHTML = h;
    ch.appendChild(div);
  });
  const f = S.failure;
  $('end-title').textContent = f.failed ? 'How it failed' : 'How it ended';
  $('failure').innerHTML = `<p>t = ${ms(f.time_ns)}${f.by ? ', exit_group by <b>' + esc(f.by.thread) + ' (' + f.by.tid +
    ')</b>' : ''}: ${esc(f.why || 'exit status ' + f.exit_code)}</p>` + (f.lines.length ? `<pre>${esc(f.lines.join('\n'))}</pre>` : '');
}

function step(dir) {
  if (!cps.length) return;
  const k = cps.findIndex(([, i]) => i === sel);
  const n = k < 0 ? (dir > 0 ? 0 : cps.length - 1) : Math.min(cps.length - 1, Math.max(0, k + dir));
  select(cps[n][1]);
}
$('axis').addEventListener('click', () => {
  axis = axis === 'steps' ? 'time' : 'steps';
  $('axis').textContent = 'axis: ' + (axis === 'steps' ? 'steps' : 'virtual time');
  draw();
});
$('prev').addEventListener('click', () => step(-1));
$('next').addEventListener('click', () => step(1));
document.addEventListener('keydown', e => {
  if (e.key === 'ArrowRight') step(1);
  else if (e.key === 'ArrowLeft') step(-1);
  else if (e.key === 't') $('axis').click();
});
lists();
if (cps.length) select(cps[0][1]); else draw();
window.addEventListener('resize', draw);
"""
