// The page only draws: every number comes from the JSON API (herd-sim and herd behind it).
"use strict";

const RULES = ["immediate", "constant", "exponential", "full", "equal", "decorrelated"];
const $ = (sel) => document.querySelector(sel);
const SVG_NS = "http://www.w3.org/2000/svg";

// ---------------------------------------------------------------- API
// A busy server answers 503 with Retry-After; come back after it, with full jitter, a few times.
async function api(path, body) {
  for (let attempt = 1; ; attempt++) {
    const res = await fetch("/api/" + path, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    let data;
    try {
      data = await res.json();
    } catch (_) {
      data = { error: "HTTP " + res.status };
    }
    if (res.ok) return data;
    if (res.status === 503 && attempt < 5) {
      const after = Number(res.headers.get("retry-after")) || 1;
      await new Promise((r) => setTimeout(r, Math.random() * after * 1000 * attempt));
      continue;
    }
    throw new Error(data.error || "HTTP " + res.status);
  }
}

function status(text) {
  $("#status").textContent = text || "";
}

const reduceMotion = window.matchMedia
  ? window.matchMedia("(prefers-reduced-motion: reduce)")
  : { matches: false };

// Latest-wins: a scene ignores answers to requests it has since replaced. Resolves to true
// when `apply` ran, false when the answer failed (`onError` ran) or was replaced, so that a
// caller awaiting it never waits for ever.
function latest() {
  let n = 0;
  return async (promise, apply, onError) => {
    const mine = ++n;
    try {
      const data = await promise;
      if (mine !== n) return false;
      status("");
      apply(data);
      return true;
    } catch (e) {
      if (mine === n) {
        if (onError) onError(e.message);
        else status(e.message);
      }
      return false;
    }
  };
}

// The one precision policy for figures, the same rules as herd_sim::figure (docs/cli.md,
// "Numbers"): integers whole; otherwise three significant figures without dropping an
// integer digit, trailing zeros dropped; exponent form only outside [1e-3, 1e9); no "-0";
// a percentage strictly between 0 and 100 never shows as 100. Ties round to even, as Rust's
// formatting does. `unit` ("s", "ms", "%" or none) follows after a space.
function fig(x, unit) {
  const text = figBare(x, unit === "%");
  return unit ? `${text} ${unit}` : text;
}

function figBare(x, percent) {
  if (!Number.isFinite(x)) return Number.isNaN(x) ? "NaN" : x > 0 ? "∞" : "-∞";
  if (x === 0) return "0";
  if (Number.isInteger(x) && Math.abs(x) < 2 ** 53) return String(x);
  // The exponent once rounded to three figures (a tie there rounds up in both languages:
  // only a 9 can carry into the exponent, and 9 is odd).
  const [mantissa, e] = x.toExponential(2).split("e");
  const exponent = Number(e);
  if (exponent < -3 || exponent >= 9) return `${figTrim(mantissa)}e${exponent}`;
  let text = figNoNegZero(figTrim(figFixed(x, Math.max(0, 2 - exponent))));
  if (percent && x > 0 && x < 100 && text === "100") {
    for (let d = 1; d <= 12 && text === "100"; d++) text = figTrim(figFixed(x, d));
  }
  return text;
}

// x with d decimals, an exact tie to even as Rust prints it (toFixed rounds ties up). A tie
// is exactly representable, so its expansion 21 digits further is a 5 and zeros only; any
// other x of magnitude at least 1e-3 differs from a tie within those digits.
function figFixed(x, d) {
  const long = Math.abs(x).toFixed(d + 21);
  if (long.slice(-21) !== "5" + "0".repeat(20)) return x.toFixed(d);
  const down = long.slice(0, -21).replace(/\.$/, "");
  const odd = Number(down.slice(-1)) % 2 === 1;
  const text = odd ? Math.abs(x).toFixed(d) : down;
  return x < 0 ? "-" + text : text;
}

function figTrim(t) {
  return t.includes(".") ? t.replace(/0+$/, "").replace(/\.$/, "") : t;
}

function figNoNegZero(t) {
  return /^-[0.]+$/.test(t) ? t.slice(1) : t;
}

function fmtSeconds(s) {
  return s === null || s === undefined ? "not all served" : fig(s, "s");
}

function setStat(id, value, text) {
  const el = $(id);
  el.dataset.value = value === null || value === undefined ? "" : String(value);
  el.textContent = text;
}

// One line per rule: its pause after the k-th failure, and what that does to a crowd.
// g(k) = min(cap, base · 2^(k−1)); the storm runs base 100 ms, cap 20 s, constant 1 s.
const RULE_INFO = {
  immediate: ["pause = 0", "Retry at once: every failed client comes back in the very next step, all together."],
  constant: ["pause = p, the same every time", "Wait the same pause after every failure: the herd stays a herd, one pause later each time."],
  exponential: ["pause = g(k) = min(cap, base · 2^(k−1))", "Double the wait after each failure: fewer attempts, but the clients still move in lockstep."],
  full: ["pause = uniform[0, g(k)]", "Draw the wait at random up to the exponential one: the clients spread out and stop colliding."],
  equal: ["pause = g(k)/2 + uniform[0, g(k)/2]", "Keep half the exponential wait and draw the rest: spread out, never too early."],
  decorrelated: ["pause = min(cap, uniform[base, 3 · previous pause])", "Draw each wait from the previous one: random and growing, whatever the failure count."],
};

function showRuleInfo(el, rule) {
  const [formula, sentence] = RULE_INFO[rule] || ["", ""];
  el.textContent = "";
  const name = document.createElement("strong");
  name.textContent = rule + ": ";
  const code = document.createElement("code");
  code.textContent = formula;
  el.append(name, code, document.createTextNode(". " + sentence));
  el.dataset.rule = rule;
}

function ruleButtons(container, onPick, initial, info) {
  for (const rule of RULES) {
    const b = document.createElement("button");
    b.textContent = rule;
    b.dataset.rule = rule;
    b.title = RULE_INFO[rule][0];
    b.setAttribute("aria-pressed", String(rule === initial));
    b.addEventListener("click", () => {
      for (const other of container.querySelectorAll("button")) {
        other.setAttribute("aria-pressed", String(other === b));
      }
      if (info) showRuleInfo(info, rule);
      onPick(rule);
    });
    container.appendChild(b);
  }
  if (info) showRuleInfo(info, initial);
}

function debounce(fn, ms) {
  let t;
  return (...args) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...args), ms);
  };
}

// A canvas sharp on any screen: its bitmap is its CSS size times the device pixel ratio, and
// drawing happens in CSS pixels.
function sharpContext(canvas) {
  const dpr = window.devicePixelRatio || 1;
  const W = Math.max(200, Math.round(canvas.clientWidth || 960));
  const H = Math.max(120, Math.round(canvas.clientHeight || 320));
  if (canvas.width !== Math.round(W * dpr) || canvas.height !== Math.round(H * dpr)) {
    canvas.width = Math.round(W * dpr);
    canvas.height = Math.round(H * dpr);
  }
  const ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  return { ctx, W, H };
}

// The two axes of a plot `pw` by `ph` at (`left`, `top`), then the style of their labels.
function drawAxes(ctx, left, top, pw, ph) {
  ctx.strokeStyle = "#888";
  ctx.lineWidth = 1;
  ctx.beginPath();
  ctx.moveTo(left, top);
  ctx.lineTo(left, top + ph);
  ctx.lineTo(left + pw, top + ph);
  ctx.stroke();
  ctx.fillStyle = "#333";
  ctx.font = "12px system-ui, sans-serif";
}

// A scene's error line under its chart (`#<scene>-error`): shown with the message, hidden
// without one.
function showChartError(scene, message) {
  const el = $("#" + scene + "-error");
  el.textContent = message ? "No chart: " + message : "";
  el.hidden = !message;
}

// A chart that has nothing to show for these settings says so, rather than keep a stale one.
function blankChart(canvas, error) {
  const { ctx, W, H } = sharpContext(canvas);
  ctx.fillStyle = "#f1f1ee";
  ctx.fillRect(0, 0, W, H);
  ctx.fillStyle = "#4a4a4a";
  ctx.font = "14px system-ui, sans-serif";
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  ctx.fillText("no chart for these settings (see the message below)", W / 2, H / 2);
  canvas.setAttribute("aria-label", "no chart: " + error);
  canvas.dataset.drawn = "error";
}

// Draws a chart growing over about `ms`: each frame sets `state.shown = shown(f)`, `f` the
// share of the time gone, and calls `draw`; at once (`f` = 1) when the reader asks for less
// motion. `data-<scene>-animation` on the body says "running", then "done".
function animate(state, scene, ms, shown, draw) {
  cancelAnimationFrame(state.frame);
  const flag = scene + "Animation";
  if (reduceMotion.matches) {
    state.shown = shown(1);
    draw();
    document.body.dataset[flag] = "done";
    return;
  }
  const started = performance.now();
  const step = (now) => {
    const f = Math.min(1, (now - started) / ms);
    state.shown = shown(f);
    draw();
    if (f < 1) state.frame = requestAnimationFrame(step);
    else document.body.dataset[flag] = "done";
  };
  document.body.dataset[flag] = "running";
  state.frame = requestAnimationFrame(step);
}

// A slider `#<id>` that shows its value (and `unit`) in `#<id>-out` and calls `onInput`.
function slider(id, unit, onInput) {
  const input = $("#" + id);
  input.addEventListener("input", () => {
    $("#" + id + "-out").textContent = input.value + unit;
    onInput();
  });
}

// ---------------------------------------------------------------- tabs
// A tab is a link (#storm, #six, …); arrow keys, Home and End move between tabs.
const loaders = {};
const tabs = [...document.querySelectorAll("#tabs [role=tab]")];
function showScene(name, focus) {
  for (const tab of tabs) {
    const on = tab.dataset.scene === name;
    tab.setAttribute("aria-selected", String(on));
    tab.tabIndex = on ? 0 : -1;
    if (on && focus) tab.focus();
    $("#scene-" + tab.dataset.scene).hidden = !on;
  }
  if (location.hash.slice(1) !== name) history.replaceState(null, "", "#" + name);
  status("");
  if (loaders[name]) loaders[name]();
}
tabs.forEach((tab, i) => {
  tab.addEventListener("click", () => showScene(tab.dataset.scene));
  tab.addEventListener("keydown", (e) => {
    const to = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1 }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    showScene(tabs[(to + tabs.length) % tabs.length].dataset.scene, true);
  });
});
window.addEventListener("hashchange", () => {
  const name = location.hash.slice(1);
  if (name in loaders) showScene(name);
});

// ---------------------------------------------------------------- Storm
// The chosen rule is drawn in colour over the other five in grey, on a time axis fitted to
// the chosen rule's run: a rule that goes on longer is cut at the right edge and says how far
// it goes, so a storm that never ends does not squeeze the chosen one into the left edge.
// Every run of the current knobs is kept until a knob moves.
const storm = { rule: "full", runs: {}, key: "", frame: null, shown: 0, error: "" };
const stormLatest = latest();
let stormBatch = 0;

// One sentence per throttle the Storm scene offers (docs/model.md lists their settings).
const THROTTLES = {
  "none": "No throttle: every client retries as its rule says.",
  "sre-adaptive": "Google SRE client-side throttling: each client refuses a request locally with probability (requests − 2 · accepts) / (requests + 1) over two minutes.",
  "grpc-adaptive": "grpc-go's adaptive throttler: the same rule, (requests − 2 · accepts) / (requests + 8) over 30 s.",
  "aws-standard": "AWS SDK standard mode: a 500-token retry quota; a retry costs 5 tokens, a first-attempt success returns 1.",
  "aws-standard-2026": "AWS SDK standard mode, the 2026 preset: the same quota, a retry costs 14 tokens.",
  "aws-adaptive": "AWS SDK adaptive mode: a client-side rate limiter whose rate follows CUBIC, and may delay first attempts.",
  "envoy-budget": "Envoy's retry budget: retries in flight at most 20 % of active requests, never fewer than 3.",
  "envoy-max-retries": "Envoy's max_retries circuit breaker: at most 3 retries in flight.",
  "envoy-admission": "Envoy's admission control: rejects requests more often as the success rate over 30 s falls below 95 %.",
  "grpc": "gRPC retryThrottling: 10 tokens, a failure costs 1, a success returns 0.1; no retry below half.",
  "ratio": "A ratio budget (Finagle, tower, Linkerd): retries at most 20 % of requests, plus 10 a second.",
};

function showThrottleInfo() {
  $("#storm-throttle-info").textContent = THROTTLES[$("#storm-throttle").value] || "";
}

function stormKnobs() {
  return {
    throttle: $("#storm-throttle").value,
    refusal_cost: $("#storm-refusal").checked ? 0.1 : 0,
    clients: Number($("#storm-clients-n").value),
    outage_s: Number($("#storm-outage").value),
    capacity: Number($("#storm-capacity").value),
  };
}

function runStorm() {
  const knobs = stormKnobs();
  const key = JSON.stringify(knobs);
  if (key !== storm.key) {
    storm.key = key;
    storm.runs = {};
    drawStormCompare();
  }
  const batch = ++stormBatch;
  const rule = storm.rule;
  document.body.dataset.stormState = "loading";
  document.body.dataset.stormCompare = "loading";
  const chosen = storm.runs[rule]
    ? Promise.resolve(storm.runs[rule])
    : api("storm", { rule, ...knobs });
  stormLatest(chosen, (data) => {
    storm.runs[rule] = data;
    storm.error = "";
    showChartError("storm", "");
    showStormStats(data);
    animateStorm();
    document.body.dataset.stormKey = `${data.rule}|${data.refusal_cost}|${data.clients}|${data.outages.length ? data.outages[0][1] : 0}`;
    document.body.dataset.stormState = "ready";
    loadOtherRules(batch, key, knobs);
  }, (message) => {
    storm.error = message;
    showChartError("storm", message);
    clearStorm();
    document.body.dataset.stormState = "error";
  });
}
const runStormSoon = debounce(runStorm, 150);

// The other rules, one at a time (the server runs few simulations at once), then a redraw.
async function loadOtherRules(batch, key, knobs) {
  for (const rule of RULES) {
    if (batch !== stormBatch) return;
    if (storm.runs[rule]) continue;
    try {
      const data = await api("storm", { rule, ...knobs });
      if (storm.key !== key) return;
      storm.runs[rule] = data;
    } catch (e) {
      if (storm.key !== key) return;
      storm.runs[rule] = { rule, error: e.message };
    }
    drawStormCompare();
    drawStorm();
  }
  if (batch !== stormBatch) return;
  drawStormCompare();
  drawStorm();
  document.body.dataset.stormCompare = "ready";
}

// An error leaves no stale figures: the chart is blanked and every number is a dash.
function clearStorm() {
  cancelAnimationFrame(storm.frame);
  for (const id of ["#storm-half", "#storm-all", "#storm-rpc", "#storm-peak"]) setStat(id, null, "–");
  $("#storm-verdict").textContent = "";
  $("#storm-clock").textContent = "";
  $("#storm-clipped").textContent = "";
  blankChart($("#storm-chart"), storm.error);
  drawStormCompare();
}

function showStormStats(r) {
  setStat("#storm-half", r.half_served_s, r.half_served_s === null ? "never" : fmtSeconds(r.half_served_s));
  setStat("#storm-all", r.all_served_s, fmtSeconds(r.all_served_s));
  setStat("#storm-rpc", r.requests_per_client, fig(r.requests_per_client));
  setStat("#storm-peak", r.peak_after_outage, String(r.peak_after_outage));
  const verdict = $("#storm-verdict");
  if (r.served === 0 && r.cut_short) {
    verdict.textContent = `Nobody served in the first ${r.horizon_s} s: the server spends every answer it could give on refusing the herd.`;
  } else if (r.all_served_s === null && r.cut_short) {
    verdict.textContent = `${r.served} of ${r.clients} clients served in the first ${r.horizon_s} s; the storm had not ended.`;
  } else {
    verdict.textContent = "";
  }
}

// The chosen run's windows, one after another, in about three seconds whatever the length
// of the run.
function animateStorm() {
  const total = storm.runs[storm.rule].series.arrivals.length;
  animate(storm, "storm", 3000, (f) => Math.max(1, Math.round(f * total)), drawStorm);
}

// How far a run looked: to its last attempt, or to its horizon when it was cut short.
function runEnd(r) {
  const n = r.series.arrivals.length * r.series.window_s;
  return r.cut_short ? Math.max(n, r.horizon_s) : n;
}

// The chosen run's time axis: its run with a little margin (none past the horizon of a run
// cut short: nothing was simulated there), and its outages whole.
function stormAxisEnd(r) {
  const outageEnd = r.outages.reduce((m, [, b]) => Math.max(m, b), 0);
  return Math.max(runEnd(r) * (r.cut_short ? 1 : 1.08), outageEnd * 1.1, r.series.window_s);
}

// "immediate goes on to 950 s" for each other run that the axis cuts.
function clippedNotes(clipped) {
  return clipped.map((o) => `${o.rule} goes on to ${fig(runEnd(o))} s`);
}

function drawStormCompare() {
  const tbody = $("#storm-compare tbody");
  tbody.textContent = "";
  for (const rule of RULES) {
    const r = storm.runs[rule];
    const tr = tbody.insertRow();
    tr.dataset.rule = rule;
    if (rule === storm.rule) tr.className = "chosen";
    let cells;
    if (!r) cells = [rule, "…", "…", "…"];
    else if (r.error) cells = [rule, "error: " + r.error, "–", "–"];
    else {
      const all = r.all_served_s !== null ? fig(r.all_served_s, "s")
        : r.cut_short ? `not in ${r.horizon_s} s` : "not all served";
      cells = [rule, `${r.served} of ${r.clients}`, all, fig(r.requests_per_client)];
    }
    for (const v of cells) tr.insertCell().textContent = v;
  }
}

// Per pixel column, the busiest window it covers.
function columnMax(values, n, cols, c) {
  const i0 = Math.floor((c / cols) * n), i1 = Math.max(i0 + 1, Math.floor(((c + 1) / cols) * n));
  let best = 0, at = -1;
  for (let i = i0; i < Math.min(i1, values.length); i++) {
    if (values[i] > best) { best = values[i]; at = i; }
  }
  return [best, at];
}

function drawStorm() {
  const r = storm.runs[storm.rule];
  if (!r || storm.error) return;
  const canvas = $("#storm-chart");
  const { ctx, W, H } = sharpContext(canvas);
  const left = 56, right = 12, top = 12, bottom = 30;
  const pw = W - left - right, ph = H - top - bottom;
  const { window_s, arrivals, served } = r.series;
  const capacity = r.series.capacity;
  const n = arrivals.length;
  // The chosen rule's time axis; the other rules loaded so far are cut at its end.
  const others = RULES.filter((x) => x !== storm.rule && storm.runs[x] && !storm.runs[x].error)
    .map((x) => storm.runs[x]);
  const tEnd = stormAxisEnd(r);
  const clipped = others.filter((o) => runEnd(o) > tEnd);
  const log = $("#storm-log").checked;
  const peak = arrivals.reduce((a, b) => Math.max(a, b), capacity);
  // Linear: zoom on the recovery (the outage's spike is clipped); log shows everything.
  const top_ = log ? peak : Math.min(peak, Math.max(capacity * 2.5, r.peak_after_outage * 1.15));
  const ymax = log ? Math.log10(peak + 1) : top_ * 1.05;
  const y = (v) => top + ph - (log ? Math.log10(Math.min(v, top_) + 1) : Math.min(v, top_)) / ymax * ph;
  const x = (t) => left + (t / tEnd) * pw;
  const cols = Math.ceil(pw);
  // A run's windows that start before the axis ends, and the pixel columns they cover.
  const windowsOf = (run) => Math.min(run.series.arrivals.length, Math.ceil(tEnd / run.series.window_s - 1e-9));
  const colsOf = (run) => Math.min(cols, Math.max(1, Math.round((windowsOf(run) * run.series.window_s / tEnd) * cols)));

  ctx.clearRect(0, 0, W, H);
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, W, H);
  // outages
  ctx.fillStyle = "#99999944";
  for (const [a, b] of r.outages) {
    ctx.fillRect(x(Math.min(a, tEnd)), top, x(Math.min(b, tEnd)) - x(Math.min(a, tEnd)), ph);
  }
  // the other rules first, arrivals as grey lines on the same axes, under the chosen one
  ctx.strokeStyle = "#b4b4b4";
  ctx.lineWidth = 1;
  const cutAt = [];
  for (const o of others) {
    const on = windowsOf(o), oc = colsOf(o);
    ctx.beginPath();
    let last = 0;
    for (let c = 0; c < oc; c++) {
      const [a] = columnMax(o.series.arrivals, on, oc, c);
      if (c === 0) ctx.moveTo(left + c, y(a));
      else ctx.lineTo(left + c, y(a));
      last = a;
    }
    ctx.stroke();
    if (clipped.includes(o)) cutAt.push(y(last));
  }
  // the chosen rule: bars, one pixel column holding the busiest of its windows
  const shown = Math.min(storm.shown, n);
  const mine = colsOf(r);
  const visible = arrivals.slice(0, shown);
  for (let c = 0; c < mine; c++) {
    if (Math.floor((c / mine) * n) >= shown) break;
    const [a, at] = columnMax(visible, n, mine, c);
    const s = at >= 0 ? served[at] : 0;
    const px = left + c;
    if (a > 0) {
      ctx.fillStyle = "#e6394699";
      ctx.fillRect(px, y(a), 1, top + ph - y(a));
      if (a > top_) {
        ctx.fillStyle = "#9d0208";
        ctx.fillRect(px, y(a), 1, 4);
      }
    }
    if (s > 0) {
      ctx.fillStyle = "#457b9d";
      ctx.fillRect(px, y(s), 1, top + ph - y(s));
    }
  }
  // capacity line
  ctx.strokeStyle = "#1d3557";
  ctx.lineWidth = 2;
  ctx.beginPath();
  ctx.moveTo(left, y(capacity));
  ctx.lineTo(left + pw, y(capacity));
  ctx.stroke();
  drawAxes(ctx, left, top, pw, ph);
  // The cut lines: an arrowhead where each leaves the chart, and a note per rule.
  ctx.fillStyle = "#555";
  for (const yy of cutAt) {
    ctx.beginPath();
    ctx.moveTo(left + pw + 1, yy - 5);
    ctx.lineTo(left + pw + 9, yy);
    ctx.lineTo(left + pw + 1, yy + 5);
    ctx.fill();
  }
  ctx.textAlign = "right";
  ctx.textBaseline = "top";
  clippedNotes(clipped).forEach((note, i) => {
    const text = "→ " + note;
    const ty = top + 20 + i * 16;
    ctx.fillStyle = "#ffffffcc";
    ctx.fillRect(left + pw - ctx.measureText(text).width - 6, ty - 1, ctx.measureText(text).width + 4, 15);
    ctx.fillStyle = "#333";
    ctx.fillText(text, left + pw - 4, ty);
  });
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  if (!log && peak > top_) {
    ctx.textAlign = "right";
    ctx.textBaseline = "top";
    ctx.fillStyle = "#9d0208";
    const note = pw > 560
      ? `bars above ${Math.round(top_)} clipped (peak ${peak}): tick "log scale" to see them whole`
      : `clipped above ${Math.round(top_)} (peak ${peak})`;
    ctx.fillText(note, left + pw, top + 2);
    ctx.fillStyle = "#333";
  }
  for (const v of log ? [1, 10, 100, 1000, 10000, 100000, 1000000].filter((v) => v <= peak) : niceTicks(top_, 5)) {
    ctx.fillText(String(v), left - 6, y(v));
  }
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  for (const t of niceTicks(tEnd, Math.max(3, Math.min(8, Math.floor(pw / 80))))) ctx.fillText(t + " s", x(t), top + ph + 6);
  $("#storm-clock").textContent = "t = " + fig(shown * window_s) + " s of " + fig(tEnd) + " s";
  canvas.dataset.tEnd = String(tEnd);
  canvas.dataset.others = String(others.length);
  canvas.dataset.clipped = clipped.map((o) => o.rule).join(",");
  canvas.dataset.drawn = storm.rule;
  $("#storm-clipped").textContent = clipped.length
    ? `Time axis fitted to ${storm.rule}, 0–${fig(tEnd)} s; cut at its right edge (→): ${clippedNotes(clipped).join(", ")}.`
    : "";
  const ended = r.all_served_s !== null ? `all served by ${fig(r.all_served_s)} s`
    : `${r.served} of ${r.clients} served in the first ${r.horizon_s} s`;
  canvas.setAttribute("aria-label",
    `requests per 100 ms window for ${storm.rule}, over ${fig(tEnd)} s, with ${others.length} other rules in grey` +
    (clipped.length ? ` (cut at ${fig(tEnd)} s: ${clippedNotes(clipped).join(", ")})` : "") +
    `: peak after the outage ${r.peak_after_outage} against a capacity of ${capacity}; ${ended}`);
}

function niceTicks(max, count) {
  if (!(max > 0)) return [0];
  const raw = max / count;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  const ticks = [];
  for (let v = 0; v <= max + 1e-9; v += step) ticks.push(Math.round(v * 1e6) / 1e6);
  return ticks;
}

ruleButtons($("#storm-rules"), (rule) => {
  storm.rule = rule;
  drawStormCompare();
  runStorm();
}, storm.rule, $("#storm-rule-info"));
for (const id of ["outage", "capacity"]) slider("storm-" + id, "", runStormSoon);
// The slider covers everyday sizes; the number box takes any the API accepts (and shows its
// refusal when the page cannot follow that many clients).
$("#storm-clients").addEventListener("input", () => {
  $("#storm-clients-n").value = $("#storm-clients").value;
  runStormSoon();
});
$("#storm-clients-n").addEventListener("input", () => {
  $("#storm-clients").value = $("#storm-clients-n").value;
  runStormSoon();
});
$("#storm-refusal").addEventListener("change", runStorm);
$("#storm-throttle").addEventListener("change", () => {
  showThrottleInfo();
  runStorm();
});
showThrottleInfo();
$("#storm-log").addEventListener("change", drawStorm);
window.addEventListener("resize", debounce(() => (storm.error ? clearStorm() : drawStorm()), 100));
loaders.storm = () => { if (!storm.runs[storm.rule] && !storm.error) runStorm(); };

// ---------------------------------------------------------------- Six clients
const six = { rule: "immediate", data: null, tick: 0, timer: null };
const sixLatest = latest();

function loadSix(rule) {
  six.rule = rule;
  stopSix();
  for (const b of document.querySelectorAll("#six-rules button")) {
    b.setAttribute("aria-pressed", String(b.dataset.rule === rule));
  }
  document.body.dataset.sixState = "loading";
  // Resolves whether the answer came, failed or was replaced: a demo never waits for ever.
  return sixLatest(api("six", { rule }), (data) => {
    six.data = data;
    six.tick = 0;
    drawSix();
    document.body.dataset.sixRule = data.rule;
    document.body.dataset.sixState = "ready";
  }, (message) => {
    status(message);
    six.data = null;
    drawSix();
    document.body.dataset.sixState = "error";
  });
}

const MARK = { served: "✓", refused: "✗", collapsed: "↯", down: "▪" };

function drawSix() {
  const d = six.data;
  const table = $("#six-grid");
  table.textContent = "";
  if (!d) {
    $("#six-summary").textContent = "";
    return;
  }
  const head = table.insertRow();
  const corner = document.createElement("th");
  corner.className = "row";
  corner.textContent = "tick";
  head.appendChild(corner);
  for (let t = 1; t <= d.ticks; t++) {
    const th = document.createElement("th");
    th.textContent = t;
    head.appendChild(th);
  }
  d.rows.forEach((cells, c) => {
    const tr = table.insertRow();
    tr.dataset.client = c + 1;
    const th = document.createElement("th");
    th.className = "row";
    th.textContent = "C" + (c + 1);
    tr.appendChild(th);
    cells.forEach((cell, i) => {
      const td = tr.insertCell();
      const t = i + 1;
      td.dataset.tick = t;
      if (d.down_ticks.includes(t)) td.classList.add("down-tick");
      if (t > six.tick) {
        td.classList.add("future");
      } else if (cell) {
        td.classList.add(cell);
        td.textContent = MARK[cell] || "?";
        td.title = cell;
        td.setAttribute("aria-label", `C${c + 1}, tick ${t}: ${cell}`);
      }
    });
  });
  const calls = table.insertRow();
  calls.className = "calls";
  const th = document.createElement("th");
  th.className = "row";
  th.textContent = "calls";
  calls.appendChild(th);
  d.calls_per_tick.forEach((n, i) => {
    const td = calls.insertCell();
    td.dataset.tick = i + 1;
    if (i + 1 <= six.tick) {
      td.textContent = n;
      if (n > d.capacity_per_tick) td.classList.add("over");
    }
  });
  $("#six-tick").textContent = "tick " + six.tick;
  $("#six-tick").dataset.value = six.tick;
  const served = d.rows.filter((_, c) => d.rows[c].slice(0, six.tick).includes("served")).length;
  const calledSoFar = d.calls_per_tick.slice(0, six.tick).reduce((a, b) => a + b, 0);
  $("#six-summary").textContent = six.tick >= d.ticks
    ? `${d.rule}: ${d.served} of ${d.clients} served, ${d.calls} calls, last call at tick ${d.last_call_tick}.`
    : `${d.rule}: tick ${six.tick} — ${served} served so far, ${calledSoFar} calls so far.`;
}

function nextSix() {
  if (!six.data) return false;
  if (six.tick >= six.data.ticks) return false;
  six.tick += 1;
  drawSix();
  return true;
}

function stopSix() {
  clearInterval(six.timer);
  six.timer = null;
  $("#six-play").textContent = "Play";
}

function playSix() {
  if (six.timer) return stopSix();
  if (!six.data) return;
  if (six.data && six.tick >= six.data.ticks) { six.tick = 0; drawSix(); }
  $("#six-play").textContent = "Pause";
  six.timer = setInterval(() => { if (!nextSix()) stopSix(); }, 450);
}

async function demoSix(rule) {
  $("#six-compare").hidden = true;
  for (const b of document.querySelectorAll("#six-rules button")) {
    if (b.dataset.rule === rule) showRuleInfo($("#six-rule-info"), rule);
  }
  if (await loadSix(rule)) playSix();
}

async function compareSix() {
  stopSix();
  const rules = ["immediate", "exponential", "full"];
  const tbody = $("#six-compare tbody");
  document.body.dataset.sixCompare = "loading";
  try {
    const results = await Promise.all(rules.map((rule) => api("six", { rule })));
    tbody.textContent = "";
    for (const r of results) {
      const tr = tbody.insertRow();
      tr.dataset.rule = r.rule;
      for (const v of [r.rule, `${r.served} of ${r.clients}`, r.calls, r.last_call_tick ?? "–"]) {
        tr.insertCell().textContent = v;
      }
    }
    $("#six-compare").hidden = false;
    status("");
    document.body.dataset.sixCompare = "ready";
  } catch (e) {
    status(e.message);
    document.body.dataset.sixCompare = "error";
  }
}

ruleButtons($("#six-rules"), (rule) => { $("#six-compare").hidden = true; loadSix(rule); }, six.rule, $("#six-rule-info"));
$("#six-next").addEventListener("click", () => { stopSix(); nextSix(); });
$("#six-play").addEventListener("click", playSix);
$("#six-reset").addEventListener("click", () => { stopSix(); six.tick = 0; drawSix(); });
$("#six-demo-immediate").addEventListener("click", () => demoSix("immediate"));
$("#six-demo-exponential").addEventListener("click", () => demoSix("exponential"));
$("#six-demo-full").addEventListener("click", () => demoSix("full"));
$("#six-demo-all").addEventListener("click", compareSix);
loaders.six = () => { if (!six.data) loadSix(six.rule); };

// ---------------------------------------------------------------- Dots
const dots = { rule: "exponential", data: null };
const dotsLatest = latest();

function loadDots() {
  document.body.dataset.dotsState = "loading";
  dotsLatest(api("dots", { rule: dots.rule, clients: 100, failures: 6 }), (data) => {
    dots.data = data;
    drawDots();
    document.body.dataset.dotsRule = data.rule;
    document.body.dataset.dotsState = "ready";
  });
}

function drawDots() {
  const d = dots.data;
  const svg = $("#dots-chart");
  svg.textContent = "";
  const W = 960, left = 175, right = 50, top = 16, rowH = 52;
  const H = top + d.rows.length * rowH + 30;
  svg.setAttribute("height", H);
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const tMax = Math.max(1, ...d.rows.map((r) => r.max_ms));
  const x = (ms) => left + (ms / tMax) * (W - left - right);
  const el = (name, attrs, text) => {
    const e = document.createElementNS(SVG_NS, name);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    svg.appendChild(e);
    return e;
  };
  d.rows.forEach((row, i) => {
    const cy = top + i * rowH + rowH / 2;
    el("line", { x1: left, x2: W - right, y1: cy, y2: cy, stroke: "#e3e3da" });
    el("text", { x: 8, y: cy - 4, "font-size": 13, fill: "#1d3557" }, `failure ${row.failure}`);
    el("text", { x: 8, y: cy + 13, "font-size": 12, fill: "#666", class: "distinct", "data-failure": row.failure, "data-value": row.distinct },
      row.distinct === 1 ? `all ${d.clients} at one instant` : `${row.distinct} different times`);
    if (row.distinct === 1) {
      el("text", { x: x(row.min_ms) + 8, y: cy - 7, "font-size": 12, fill: "#9d0208" }, `×${d.clients}`);
    }
    row.retry_ms.forEach((ms, c) => {
      // A little vertical spread so stacked dots show as a column, not one blot.
      const dy = ((c * 37) % 21) - 10;
      el("circle", { cx: x(ms).toFixed(2), cy: cy + (row.distinct === 1 ? 0 : dy), r: 4, fill: "#e6394666", stroke: "#e63946", "stroke-width": 0.6, class: "dot", "data-failure": row.failure });
    });
  });
  // The same facts as text, for screen readers (the drawing is one image to them).
  const list = $("#dots-text");
  list.textContent = "";
  for (const row of d.rows) {
    const li = document.createElement("li");
    li.textContent = row.distinct === 1
      ? `Failure ${row.failure}: all ${d.clients} clients retry at the same instant, ${fig(row.min_ms / 1000, "s")}.`
      : `Failure ${row.failure}: ${row.distinct} different times, from ${fig(row.min_ms / 1000, "s")} to ${fig(row.max_ms / 1000, "s")}.`;
    list.appendChild(li);
  }
  const axisY = top + d.rows.length * rowH + 6;
  el("line", { x1: left, x2: W - right, y1: axisY, y2: axisY, stroke: "#888" });
  for (const s of niceTicks(tMax / 1000, 8)) {
    el("text", { x: x(s * 1000), y: axisY + 16, "font-size": 12, fill: "#333", "text-anchor": "middle" }, s + " s");
  }
}

ruleButtons($("#dots-rules"), (rule) => { dots.rule = rule; loadDots(); }, dots.rule, $("#dots-rule-info"));
loaders.dots = () => { if (!dots.data) loadDots(); };

// ---------------------------------------------------------------- Layers
const layers = { attempts: [3, 3, 3], data: null };
const layersLatest = latest();

function loadLayers() {
  document.body.dataset.layersState = "loading";
  const layer_aware = $("#layers-aware").checked;
  layersLatest(api("layers", { attempts: layers.attempts, layer_aware }), (data) => {
    layers.data = data;
    drawLayers();
    document.body.dataset.layersKey = `${layers.attempts.join(",")}|${data.layer_aware}`;
    document.body.dataset.layersState = "ready";
  });
}

function drawLayers() {
  const d = layers.data;
  const chain = $("#layers-chain");
  chain.textContent = "";
  d.services.forEach((s, i) => {
    const box = document.createElement("div");
    box.className = "service";
    box.dataset.service = s.name;
    if (i === d.services.length - 1) box.classList.add("db");
    box.innerHTML = `<div class="name"></div><div class="receives"></div><div class="unit">per request<br>at the top</div>`;
    box.querySelector(".name").textContent = s.name;
    const r = box.querySelector(".receives");
    r.textContent = fig(s.predicted);
    r.dataset.value = s.predicted;
    chain.appendChild(box);
    if (i < layers.attempts.length) {
      const edge = document.createElement("div");
      edge.className = "edge";
      edge.innerHTML = `<label>attempts<br><input type="number" min="1" max="10" step="1"></label><div class="arrow">→</div>`;
      const input = edge.querySelector("input");
      input.value = layers.attempts[i];
      input.dataset.layer = i;
      input.addEventListener("change", () => {
        layers.attempts[i] = Number(input.value);
        loadLayers();
      });
      chain.appendChild(edge);
    }
  });
  const last = d.services[d.services.length - 1];
  const n = fig(last.predicted);
  $("#layers-summary").textContent =
    `One request at the top becomes ${n} at ${last.name} while ${last.name} is failing.`;
}

$("#layers-aware").addEventListener("change", loadLayers);
$("#layers-every").addEventListener("click", () => { layers.attempts = layers.attempts.map(() => 3); loadLayers(); });
$("#layers-db-only").addEventListener("click", () => {
  layers.attempts = layers.attempts.map((_, i) => (i === layers.attempts.length - 1 ? 3 : 1));
  loadLayers();
});
$("#layers-add").addEventListener("click", () => { if (layers.attempts.length < 8) { layers.attempts.push(1); loadLayers(); } });
$("#layers-remove").addEventListener("click", () => { if (layers.attempts.length > 1) { layers.attempts.pop(); loadLayers(); } });
loaders.layers = () => { if (!layers.data) loadLayers(); };

// ---------------------------------------------------------------- Hedging
// Every policy runs on the same users and the same server pauses; the chosen policy's tail is
// drawn in colour over the tail without hedging (dark grey) and the other policies (grey).
const HEDGE_POLICIES = {
  none: ["no hedging", "One copy per sub-request: a sub-request that meets a paused server waits out the pause."],
  delay: ["fixed delay", "A second copy to another server when the first has not answered after the hedge delay."],
  percentile: ["learned p99", "A second copy after the p99 of recent sub-request latencies, learned by herd's LatencyHistogram (the hedge delay box does not apply)."],
  budget: ["delay + 2 % budget", "The fixed delay, but herd's RetryBudget allows hedges for at most 2 % of sub-requests over 10 s."],
  tied: ["tied", "Two copies at once to two servers; when one starts service, the other is cancelled. Costs messages, not service time."],
};
const hedge = { policy: "delay", data: null, error: "", frame: null, shown: 1 };
const hedgeLatest = latest();

function hedgeKnobs() {
  const delay = $("#hedge-delay").value;
  return {
    policy: hedge.policy,
    // An empty box is sent as null, which the API refuses by name, rather than as 0.
    delay_ms: delay === "" ? null : Number(delay),
    utilisation: Number($("#hedge-utilisation").value) / 100,
    fan_out: Number($("#hedge-fan-out").value),
  };
}

function fmtMs(v) {
  return fig(v, "ms");
}

function fmtPercent(v) {
  return fig(v, "%");
}

function hedgeLabel(policy) {
  return (HEDGE_POLICIES[policy] || [policy])[0];
}

function runHedge() {
  document.body.dataset.hedgeState = "loading";
  $("#scene-hedge .chart-wrap").classList.add("stale");
  hedgeLatest(api("hedge", hedgeKnobs()), (data) => {
    hedge.data = data;
    hedge.error = "";
    $("#scene-hedge .chart-wrap").classList.remove("stale");
    showChartError("hedge", "");
    showHedgeFigures();
    animateHedge();
    document.body.dataset.hedgeKey = `${data.policy}|${data.delay_ms}|${data.utilisation}|${data.fan_out}`;
    document.body.dataset.hedgeState = "ready";
  }, (message) => {
    hedge.data = null;
    hedge.error = message;
    $("#scene-hedge .chart-wrap").classList.remove("stale");
    showChartError("hedge", message);
    clearHedge();
    document.body.dataset.hedgeState = "error";
  });
}
const runHedgeSoon = debounce(runHedge, 150);

// An error leaves no stale figures: the chart is blanked and every number is a dash.
function clearHedge() {
  cancelAnimationFrame(hedge.frame);
  for (const id of ["#hedge-p99", "#hedge-p99-none", "#hedge-p999", "#hedge-p999-none", "#hedge-extra"]) setStat(id, null, "–");
  const verdict = $("#hedge-verdict");
  verdict.textContent = "";
  verdict.className = "verdict";
  $("#hedge-sample").textContent = "";
  const tbody = $("#hedge-compare tbody");
  tbody.textContent = "";
  for (const policy of Object.keys(HEDGE_POLICIES)) {
    const tr = tbody.insertRow();
    tr.dataset.policy = policy;
    tr.insertCell().textContent = hedgeLabel(policy);
    for (let i = 0; i < 6; i++) tr.insertCell().textContent = "–";
  }
  $("#hedge-chart-text").textContent = "";
  blankChart($("#hedge-chart"), hedge.error);
}

function hedgeResult(policy) {
  return hedge.data.results.find((r) => r.policy === policy);
}

function showHedgeFigures() {
  const d = hedge.data;
  const mine = hedgeResult(d.policy), none = hedgeResult("none");
  setStat("#hedge-p99", mine.p99_ms, fmtMs(mine.p99_ms));
  setStat("#hedge-p99-none", none.p99_ms, fmtMs(none.p99_ms));
  setStat("#hedge-p999", mine.p999_ms, fmtMs(mine.p999_ms));
  setStat("#hedge-p999-none", none.p999_ms, fmtMs(none.p999_ms));
  setStat("#hedge-extra", mine.extra_load_percent, fmtPercent(mine.extra_load_percent));
  const at = `At ${Math.round(d.utilisation * 100)} % utilisation`;
  const name = hedgeLabel(d.policy);
  const verdict = $("#hedge-verdict");
  verdict.dataset.pays = mine.pays === null ? "" : String(mine.pays);
  if (mine.pays === null) {
    verdict.textContent = `${at}, without hedging: p99.9 ${fmtMs(none.p999_ms)}. Pick a policy to compare.`;
    verdict.className = "verdict pays";
  } else if (mine.pays) {
    verdict.textContent = `${at}, ${name} cuts p99.9 from ${fmtMs(none.p999_ms)} to ${fmtMs(mine.p999_ms)} for ${fmtPercent(mine.extra_load_percent)} more requests.`;
    verdict.className = "verdict pays";
  } else {
    verdict.textContent = `${at}, ${name} makes p99.9 worse: ${fmtMs(mine.p999_ms)} against ${fmtMs(none.p999_ms)} without hedging. Past the crossover, it no longer pays.`;
    verdict.className = "verdict";
  }
  $("#hedge-sample").textContent = `(${d.requests} user requests each` +
    (d.requests_capped ? ", fewer at this fan-out to bound the work)" : ")");
  const tbody = $("#hedge-compare tbody");
  tbody.textContent = "";
  for (const r of d.results) {
    const tr = tbody.insertRow();
    tr.dataset.policy = r.policy;
    if (r.policy === d.policy) tr.className = "chosen";
    const cells = [
      [hedgeLabel(r.policy), r.policy],
      [fmtMs(r.p50_ms), r.p50_ms],
      [fmtMs(r.p99_ms), r.p99_ms],
      [fmtMs(r.p999_ms), r.p999_ms],
      [fmtPercent(r.extra_load_percent), r.extra_load_percent],
      [fmtPercent(r.utilisation_percent), r.utilisation_percent],
      [r.pays === null ? "–" : r.pays ? "pays" : "worse", r.pays === null ? "" : String(r.pays)],
    ];
    for (const [text, value] of cells) {
      const td = tr.insertCell();
      td.textContent = text;
      td.dataset.value = String(value);
    }
    const last = tr.cells[tr.cells.length - 1];
    if (r.pays !== null) last.className = r.pays ? "pays" : "worse";
  }
}

// The chosen tail grows from the fastest request to the slowest in about half a second.
function animateHedge() {
  animate(hedge, "hedge", 500, (f) => f, drawHedge);
}

const SHARE_LABELS = [[1, "100 %"], [0.1, "10 %"], [0.01, "1 %"], [0.001, "0.1 %"], [0.0001, "0.01 %"], [0.00001, "0.001 %"]];

function drawHedge() {
  const d = hedge.data;
  if (!d || hedge.error) return;
  const canvas = $("#hedge-chart");
  const { ctx, W, H } = sharpContext(canvas);
  const left = 64, right = 14, top = 28, bottom = 46;
  const pw = W - left - right, ph = H - top - bottom;
  const all = d.results.flatMap((r) => r.tail);
  const xs = all.map((p) => p[0]).filter((v) => v > 0);
  const x0 = Math.pow(10, Math.floor(Math.log10(Math.min(...xs))));
  const x1 = Math.pow(10, Math.ceil(Math.log10(Math.max(...xs))));
  const y1 = Math.min(...all.map((p) => p[1]));
  const yBottom = Math.pow(10, Math.floor(Math.log10(y1)));
  const x = (ms) => left + (Math.log10(Math.max(ms, x0) / x0) / Math.log10(x1 / x0)) * pw;
  const y = (share) => top + (Math.log10(share) / Math.log10(yBottom)) * ph;

  ctx.clearRect(0, 0, W, H);
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, W, H);
  // grid: decades of latency, shares of requests
  ctx.strokeStyle = "#ecece6";
  ctx.lineWidth = 1;
  ctx.fillStyle = "#333";
  ctx.font = "12px system-ui, sans-serif";
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  for (let e = Math.round(Math.log10(x0)); e <= Math.round(Math.log10(x1)); e++) {
    const v = Number(Math.pow(10, e).toPrecision(1));
    ctx.beginPath();
    ctx.moveTo(x(v), top);
    ctx.lineTo(x(v), top + ph);
    ctx.stroke();
    ctx.fillText(v >= 1000 ? v / 1000 + " s" : v + " ms", x(v), top + ph + 6);
  }
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (const [share, label] of SHARE_LABELS) {
    if (share < yBottom) continue;
    ctx.beginPath();
    ctx.moveTo(left, y(share));
    ctx.lineTo(left + pw, y(share));
    ctx.stroke();
    ctx.fillText(label, left - 6, y(share));
  }
  // p99 and p99.9: the shares 1 % and 0.1 % of requests
  ctx.save();
  ctx.setLineDash([5, 4]);
  ctx.strokeStyle = "#8a8a8a";
  ctx.fillStyle = "#4a4a4a";
  ctx.textAlign = "left";
  ctx.textBaseline = "bottom";
  for (const [share, label] of [[0.01, "p99"], [0.001, "p99.9"]]) {
    if (share < yBottom) continue;
    ctx.beginPath();
    ctx.moveTo(left, y(share));
    ctx.lineTo(left + pw, y(share));
    ctx.stroke();
    ctx.fillText(label, left + 4, y(share) - 2);
  }
  ctx.restore();
  const curve = (tail, upto) => {
    ctx.beginPath();
    const n = Math.max(1, Math.round(upto * tail.length));
    for (let i = 0; i < n; i++) {
      const [ms, share] = tail[i];
      if (i === 0) ctx.moveTo(x(ms), y(share));
      else {
        // a step: still tail[i − 1]'s share until this latency
        ctx.lineTo(x(ms), y(tail[i - 1][1]));
        ctx.lineTo(x(ms), y(share));
      }
    }
    ctx.stroke();
  };
  // the other policies first, in grey, under the two that matter
  ctx.lineWidth = 1.5;
  ctx.strokeStyle = "#b4b4b4";
  for (const r of d.results) {
    if (r.policy !== d.policy && r.policy !== "none") curve(r.tail, 1);
  }
  if (d.policy !== "none") {
    ctx.lineWidth = 2.5;
    ctx.strokeStyle = "#4a4a4a";
    curve(hedgeResult("none").tail, 1);
  }
  ctx.lineWidth = 3;
  ctx.strokeStyle = "#e63946";
  curve(hedgeResult(d.policy).tail, hedge.shown);
  drawAxes(ctx, left, top, pw, ph);
  // axis titles, outside the plot so that no curve runs under them
  ctx.textAlign = "left";
  ctx.textBaseline = "top";
  ctx.fillText("share of user requests at least this slow (log scale)", 8, 4);
  ctx.textAlign = "right";
  ctx.textBaseline = "bottom";
  ctx.fillText("latency of a user request (log scale)", left + pw, H - 2);
  canvas.dataset.drawn = d.policy;
  const mine = hedgeResult(d.policy), none = hedgeResult("none");
  const name = hedgeLabel(d.policy);
  canvas.setAttribute("aria-label",
    `Latency tail at ${Math.round(d.utilisation * 100)} % utilisation: ${name} in colour` +
    (d.policy === "none" ? "" : " against no hedging in dark grey") + ", the other policies in grey");
  const compare = d.policy === "none" ? "" :
    ` Without hedging: p99 ${fmtMs(none.p99_ms)}, p99.9 ${fmtMs(none.p999_ms)}. ` +
    (mine.pays ? "Hedging pays here." : "Hedging makes the tail worse here.");
  $("#hedge-chart-text").textContent =
    `The share of user requests at least as slow as each latency, both axes logarithmic, over ${d.requests} requests. ` +
    `${name}: p50 ${fmtMs(mine.p50_ms)}, p99 ${fmtMs(mine.p99_ms)}, p99.9 ${fmtMs(mine.p999_ms)}, slowest ${fmtMs(mine.tail[mine.tail.length - 1][0])}, ` +
    `${fmtPercent(mine.extra_load_percent)} more requests.` + compare;
}

(function hedgeControls() {
  const box = $("#hedge-policies");
  for (const [policy, [label, about]] of Object.entries(HEDGE_POLICIES)) {
    const b = document.createElement("button");
    b.textContent = label;
    b.dataset.policy = policy;
    b.title = about;
    b.setAttribute("aria-pressed", String(policy === hedge.policy));
    b.addEventListener("click", () => {
      for (const other of box.querySelectorAll("button")) other.setAttribute("aria-pressed", String(other === b));
      hedge.policy = policy;
      showHedgeInfo();
      runHedge();
    });
    box.appendChild(b);
  }
  showHedgeInfo();
  slider("hedge-utilisation", " %", runHedgeSoon);
  slider("hedge-fan-out", "", runHedgeSoon);
  $("#hedge-delay").addEventListener("input", runHedgeSoon);
})();

function showHedgeInfo() {
  const [label, about] = HEDGE_POLICIES[hedge.policy];
  const el = $("#hedge-policy-info");
  el.textContent = "";
  const name = document.createElement("strong");
  name.textContent = label + ": ";
  el.append(name, document.createTextNode(about));
  el.dataset.policy = hedge.policy;
}

window.addEventListener("resize", debounce(() => (hedge.error ? clearHedge() : drawHedge()), 100));
loaders.hedge = () => { if (!hedge.data && !hedge.error) runHedge(); };

// ---------------------------------------------------------------- Your config
// The pasted text goes to /api/check, which reads it as `herd check` does; the page shows the
// translation (each field set or default), the findings, and each policy's storm beside the fix.
const check = { data: null, error: "", examples: null };
const checkLatest = latest();

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function loadCheckExamples() {
  check.examples = [];
  fetch("/api/check/examples")
    .then((res) => res.json())
    .then((list) => {
      check.examples = list;
      const box = $("#check-examples");
      box.textContent = "";
      for (const ex of list) {
        const b = el("button", { type: "button", "data-example": ex.name, title: "scenarios/configs/" + ex.name }, ex.label);
        b.addEventListener("click", () => {
          $("#check-text").value = ex.text;
          $("#check-format").value = "auto";
          runCheck();
        });
        box.appendChild(b);
      }
      document.body.dataset.checkExamples = "ready";
    })
    .catch((e) => status("examples: " + e.message));
}

// The fields an error can name (the API's names), and the box each one is typed in.
const checkInputs = { text: "#check-text", clients: "#check-clients", capacity: "#check-capacity", outage_s: "#check-outage" };

function runCheck() {
  document.body.dataset.checkState = "loading";
  $("#check-results").classList.add("stale");
  const body = {
    text: $("#check-text").value,
    format: $("#check-format").value,
    clients: Number($("#check-clients").value),
    capacity: Number($("#check-capacity").value),
    outage_s: Number($("#check-outage").value),
  };
  for (const id of Object.values(checkInputs)) $(id).removeAttribute("aria-invalid");
  checkLatest(api("check", body), (data) => {
    check.data = data;
    check.error = "";
    $("#check-results").classList.remove("stale");
    $("#check-error").hidden = true;
    showCheck();
    document.body.dataset.checkKey = `${data.system}|${data.policies.length}|${data.findings.length}|${data.storm.clients}`;
    document.body.dataset.checkState = "ready";
    runWhatIf(body.text, body.format);
  }, (message) => {
    check.data = null;
    check.error = message;
    $("#check-results").classList.remove("stale");
    clearCheck();
    clearWhatIf();
    // A what-if still on its way belongs to the text before: its answer is dropped.
    whatifLatest(Promise.reject(new Error("replaced")), () => {}, () => {});
    $("#check-whatif").hidden = true;
    document.body.dataset.whatifState = "none";
    // The error's first word is the field at fault: mark that box (the text's by default).
    showFormError("check", message, checkInputs, /^(clients|capacity|outage_s)\b/, checkInputs.text);
  });
}

// A form's error under its pane (`#<pane>-error`): the message shown, the box of the field
// `fields` finds as its first word marked invalid (else `fallback`'s, when given), and the
// pane's state "error".
function showFormError(pane, message, inputs, fields, fallback) {
  const field = fields.exec(message);
  const box = field ? inputs[field[1]] : fallback;
  if (box) $(box).setAttribute("aria-invalid", "true");
  const error = $(`#${pane}-error`);
  error.textContent = message;
  error.hidden = false;
  document.body.dataset[`${pane}State`] = "error";
}

// An error leaves nothing stale: no summary, no policy, no finding, no storm.
function clearCheck() {
  $("#check-summary").textContent = "";
  $("#check-policies").textContent = "";
  $("#check-findings tbody").textContent = "";
  $("#check-findings-wrap").hidden = true;
  $("#check-storms").textContent = "";
}

function fmtNumber(v) {
  return Number.isInteger(v) ? String(v) : String(Math.round(v * 1000) / 1000);
}

function backoffText(b) {
  if (b.rule === "immediate") return "immediate (no pause)";
  if (b.rule === "constant") return `constant ${fmtNumber(b.base_ms)} ms`;
  const jitter = ["grpc", "grpc-retry", "randomized"].includes(b.rule) ? `±${fmtNumber(b.jitter * 100)} % ` : "";
  return `${b.rule}: ${jitter}×${fmtNumber(b.multiplier)} from ${fmtNumber(b.base_ms)} ms, cap ${fmtNumber(b.cap_ms)} ms`;
}

function msText(v) {
  return v === null || v === undefined ? "none" : fmtNumber(v) + " ms";
}

function showCheck() {
  clearCheck();
  const d = check.data;
  const count = (sev) => d.findings.filter((f) => f.severity === sev).length;
  $("#check-summary").textContent =
    `Read as ${d.system} (${d.detected ? "detected" : "as picked"}): ${d.policies.length} retry ` +
    `${d.policies.length === 1 ? "policy" : "policies"}; findings: ${count("error")} error, ` +
    `${count("warning")} warning, ${count("info")} info` +
    (d.ignored.length ? `; ${d.ignored.length} keys no translator reads (${d.ignored.map(([l, f]) => f + " line " + l).join(", ")})` : "") + ".";
  const policies = $("#check-policies");
  for (const p of d.policies) policies.appendChild(policyBlock(p));
  const tbody = $("#check-findings tbody");
  for (const f of d.findings) {
    const tr = tbody.insertRow();
    tr.dataset.code = f.code;
    tr.className = "sev-" + f.severity;
    tr.insertCell().textContent = f.severity;
    tr.insertCell().textContent = String(f.line);
    tr.insertCell().textContent = f.message;
    tr.insertCell().textContent = f.fix;
  }
  $("#check-findings-wrap").hidden = d.findings.length === 0;
  const storms = $("#check-storms");
  if (d.storm.runs.length === 0) storms.appendChild(el("p", {}, "No policy retries: there is no storm to run."));
  d.storm.runs.forEach((run, i) => storms.appendChild(stormBlock(run, i, d.storm)));
  if (d.storm.not_run > 0) {
    storms.appendChild(el("p", {}, `${d.storm.not_run} more retrying policies were not run here (the page runs the first ${d.storm.runs.length}); herd check runs them all.`));
  }
  for (const canvas of storms.querySelectorAll("canvas")) drawCheckChart(canvas);
}

// One policy: its values in herd's terms, then each field read, set on a line or defaulted.
function policyBlock(p) {
  const wrap = el("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": `${p.name} (line ${p.line}): translation (scrolls sideways)` });
  const table = el("table", { class: "results translation" });
  table.appendChild(el("caption", {}, `${p.name} (line ${p.line}) in herd's terms`));
  const tbody = table.createTBody();
  const throttle = p.throttle ? `${p.throttle.kind} (${p.throttle.params.map(([k, v]) => k + " " + fmtNumber(v)).join(", ")})` : "none";
  const rows = [
    ["attempts", p.max_attempts === null ? "no count (a budget bounds them)" : String(p.max_attempts)],
    ["pauses", backoffText(p.backoff)],
    ["per-try timeout", msText(p.per_try_timeout_ms)],
    ["timeout", msText(p.timeout_ms)],
    ["retried on", p.retry_on.length ? p.retry_on.join(", ") : "–"],
    ["throttle", throttle],
  ];
  if (p.hedging) rows.push(["hedging", `${p.hedging[0]} copies, ${fmtNumber(p.hedging[1])} ms apart`]);
  for (const [name, value] of rows) {
    const tr = tbody.insertRow();
    tr.dataset.row = name;
    tr.appendChild(el("th", { scope: "row" }, name));
    tr.insertCell().textContent = value;
  }
  const tr = tbody.insertRow();
  tr.dataset.row = "fields";
  tr.appendChild(el("th", { scope: "row" }, "fields"));
  const ul = el("ul", { class: "fields" });
  for (const f of p.fields) {
    const li = el("li", { class: f.source, "data-field": f.field }, f.source === "set" ? `${f.field}: set, line ${f.line}` : `${f.field}: default`);
    ul.appendChild(li);
  }
  tr.insertCell().appendChild(ul);
  wrap.appendChild(table);
  return wrap;
}

// One policy's storm beside the fix: the figures side by side, the notes, a small chart.
function stormBlock(run, i, storm) {
  const box = el("div", { class: "check-storm", "data-index": String(i) });
  box.appendChild(el("h2", {}, `${run.name} (line ${run.line}) in the storm`));
  const wrap = el("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": `${run.name} (line ${run.line}): storm beside the fix (scrolls sideways)` });
  const table = el("table", { class: "results storm-compare" });
  const outage = storm.outages.map(([a, b]) => `${fmtNumber(b - a)} s`).join(", ") || "none";
  table.appendChild(el("caption", {}, `${storm.clients} clients, an outage of ${outage}, seed ${storm.seed}; the fix: ${run.fix_summary}`));
  const head = table.createTHead().insertRow();
  for (const h of ["figure", "as configured", "with the fix"]) head.appendChild(el("th", { scope: "col" }, h));
  const tbody = table.createTBody();
  const rows = [
    ["served", (o) => `${o.served} of ${storm.clients}`],
    // Those not served within the run gave up (their call's timeout or attempts ran out) or
    // were still waiting when it ended: "0 of 2000 served" alone does not say which.
    ["gave up", (o) => String(o.gave_up)],
    ["all served by", (o) => fmtSeconds(o.all_served_s)],
    ["requests per client", (o) => fig(o.requests_per_client)],
    ["peak after the outage", (o) => String(o.peak_after_outage)],
  ];
  for (const [name, show] of rows) {
    const tr = tbody.insertRow();
    tr.dataset.row = name;
    tr.appendChild(el("th", { scope: "row" }, name));
    tr.insertCell().textContent = show(run.config);
    tr.insertCell().textContent = show(run.fix);
  }
  wrap.appendChild(table);
  box.appendChild(wrap);
  if (run.notes.length) {
    const ul = el("ul", { class: "notes", "aria-label": "what the storm could not express" });
    for (const n of run.notes) ul.appendChild(el("li", {}, n));
    box.appendChild(ul);
  }
  const chart = el("div", { class: "chart-wrap" });
  const seconds = fmtNumber(run.config.arrivals.length * run.window_s);
  const canvas = el("canvas", {
    class: "check-chart",
    role: "img",
    "data-index": String(i),
    "aria-label": `requests per ${fmtNumber(run.window_s * 1000)} ms window over the first ${seconds} s: ` +
      `peak after the outage ${run.config.peak_after_outage} as configured, ${run.fix.peak_after_outage} with the fix, ` +
      `against a capacity of ${fmtNumber(run.capacity)}`,
  });
  chart.appendChild(canvas);
  const legend = el("div", { class: "legend" });
  legend.innerHTML = '<span class="sw chosen"></span> as configured <span class="sw fixline"></span> with the fix <span class="sw cap"></span> capacity <span class="sw outage"></span> outage';
  chart.appendChild(legend);
  box.appendChild(chart);
  return box;
}

// A series of bins drawn as steps, each value flat across its bin: `x` maps a bin's index to
// pixels, `y` a value.
function stepLine(ctx, x, y, series, colour, width) {
  ctx.strokeStyle = colour;
  ctx.lineWidth = width;
  ctx.beginPath();
  series.forEach((v, i) => {
    if (i === 0) ctx.moveTo(x(i), y(v));
    else ctx.lineTo(x(i), y(v));
    ctx.lineTo(x(i + 1), y(v));
  });
  ctx.stroke();
}

// Load over time against the backend's capacity, as the check storm and what-if charts draw
// it: the fault's spans shaded (seconds), both axes labelled (the x axis in seconds), the
// capacity as a dark line and each series (values per step of `step_s` seconds) as steps,
// in order, so the last is drawn on top.
function drawLoadChart(ctx, box, { n, max, step_s, spans, capacity, series }) {
  const { left, top, pw, ph } = box;
  const x = (i) => left + (i / n) * pw;
  const y = (v) => top + ph - (v / max) * ph;
  ctx.fillStyle = "#99999944";
  for (const [a, b] of spans) {
    const from = Math.min(a / step_s, n), to = Math.min(b / step_s, n);
    if (to > from) ctx.fillRect(x(from), top, Math.max(1, x(to) - x(from)), ph);
  }
  drawAxes(ctx, left, top, pw, ph);
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (const t of niceTicks(max, 4)) ctx.fillText(fig(t), left - 4, y(t));
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  for (const t of niceTicks(n * step_s, 6)) ctx.fillText(t + " s", x(t / step_s), top + ph + 4);
  ctx.strokeStyle = "#1d3557";
  ctx.lineWidth = 1;
  ctx.beginPath();
  ctx.moveTo(left, y(capacity));
  ctx.lineTo(left + pw, y(capacity));
  ctx.stroke();
  for (const [values, colour, width] of series) stepLine(ctx, x, y, values, colour, width);
}

// Requests per window, as configured (red) over the fix (blue), with the capacity.
function drawCheckChart(canvas) {
  const run = check.data && check.data.storm.runs[Number(canvas.dataset.index)];
  if (!run) return;
  const { ctx, W, H } = sharpContext(canvas);
  ctx.clearRect(0, 0, W, H);
  const left = 48, top = 10, right = 24, bottom = 26;
  const pw = W - left - right, ph = H - top - bottom;
  drawLoadChart(ctx, { left, top, pw, ph }, {
    n: Math.max(run.config.arrivals.length, run.fix.arrivals.length, 1),
    max: Math.max(run.capacity, ...run.config.arrivals, ...run.fix.arrivals, 1),
    step_s: run.window_s,
    spans: check.data.storm.outages,
    capacity: run.capacity,
    series: [[run.fix.arrivals, "#457b9d", 2], [run.config.arrivals, "#e63946", 2]],
  });
  canvas.dataset.drawn = "chart";
}

// ---------------------------------------------------------------- Your config: the what-if
// The same text goes to /api/check/whatif, which runs `herd check`'s three faults on each
// retrying policy, as set beside the fix; the page shows the figures, the fix's snippet and
// the load at the backend over time.
const whatif = { data: null };
const whatifLatest = latest();
const whatifInputs = { rps: "#whatif-rps", capacity_rps: "#whatif-capacity", brownout: "#whatif-brownout" };
const FAULT_TEXT = { brownout: "brownout", overload: "overload", outage: "outage" };

function runWhatIf(text, format) {
  document.body.dataset.whatifState = "loading";
  $("#check-whatif").hidden = false;
  $("#whatif-runs").classList.add("stale");
  const rps = $("#whatif-rps").value.trim();
  const body = {
    text,
    format,
    rps: rps === "" ? null : Number(rps),
    capacity_rps: Number($("#whatif-capacity").value),
    brownout: Number($("#whatif-brownout").value),
  };
  for (const id of Object.values(whatifInputs)) $(id).removeAttribute("aria-invalid");
  $("#whatif-summary").textContent = "Running the three faults…";
  whatifLatest(api("check/whatif", body), (data) => {
    whatif.data = data;
    $("#whatif-runs").classList.remove("stale");
    $("#whatif-error").hidden = true;
    showWhatIf();
    const w = data.whatif;
    document.body.dataset.whatifKey = `${data.runs.length}|${w.rps}|${w.capacity_rps}|${w.brownout}`;
    document.body.dataset.whatifState = "ready";
  }, (message) => {
    whatif.data = null;
    $("#whatif-runs").classList.remove("stale");
    clearWhatIf();
    // The error's first word names the knob at fault; otherwise it is about the text.
    showFormError("whatif", message, whatifInputs, /^(rps|capacity_rps|brownout)\b/);
  });
}

function clearWhatIf() {
  $("#whatif-summary").textContent = "";
  $("#whatif-runs").textContent = "";
}

function recoveredText(v) {
  return v === null || v === undefined ? "never" : fig(v, "s");
}

// The figures a row shows, as `herd check`'s table does.
const WHATIF_ROWS = [
  ["goodput", (f) => fig(f.goodput * 100, "%")],
  ["amplification", (f) => fig(f.amplification)],
  ["peak load", (f) => fig(f.peak_load)],
  ["recovered", (f) => recoveredText(f.recovered_s)],
];

function showWhatIf() {
  clearWhatIf();
  const d = whatif.data;
  const w = d.whatif;
  $("#whatif-summary").textContent =
    `${fig(w.rps)} new requests/s against a capacity of ${fig(w.capacity_rps)}/s; brownout: ` +
    `${fig(w.brownout * 100, "%")} of attempts fail; overload: capacity drops to ` +
    `${fig(w.overload * 100, "%")} of the load; outage: the backend refuses everything; failures ` +
    `answer ${w.failure_status}; seed ${w.seed}. Goodput: the requests that arrived during the fault ` +
    `and finally succeeded; amplification: attempts per request; peak load: the busiest second over ` +
    `the capacity; recovered: seconds after the fault until goodput is normal again.`;
  const box = $("#whatif-runs");
  if (d.runs.length === 0) {
    box.appendChild(el("p", {}, "No policy retries: there is nothing to run."));
    return;
  }
  // The runs come per policy, its three faults in order.
  const policies = [];
  for (const run of d.runs) {
    const last = policies[policies.length - 1];
    if (last && last.line === run.line && last.policy === run.policy) last.runs.push(run);
    else policies.push({ policy: run.policy, line: run.line, runs: [run] });
  }
  policies.forEach((p, i) => box.appendChild(whatifBlock(p, i, w)));
  for (const canvas of box.querySelectorAll("canvas")) drawWhatIfChart(canvas);
}

// One policy: a table of the three faults (as set beside the fix), the fix's snippet, the
// notes, and a chart per fault with its table alternative.
function whatifBlock(p, i, w) {
  const box = el("div", { class: "whatif-policy", "data-index": String(i) });
  box.appendChild(el("h3", {}, `${p.policy} (line ${p.line})`));
  const wrap = el("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": `${p.policy} (line ${p.line}): the three faults (scrolls sideways)` });
  const table = el("table", { class: "results whatif-compare" });
  table.appendChild(el("caption", {}, `${p.policy}: each fault as set and with the fix`));
  const head = table.createTHead().insertRow();
  for (const h of ["fault", "figure", "as set", "with the fix"]) head.appendChild(el("th", { scope: "col" }, h));
  for (const run of p.runs) {
    const tbody = table.createTBody();
    tbody.dataset.fault = run.scenario;
    WHATIF_ROWS.forEach(([name, show], k) => {
      const tr = tbody.insertRow();
      tr.dataset.row = name;
      if (k === 0) {
        tr.appendChild(el("th", { scope: "rowgroup", rowspan: String(WHATIF_ROWS.length) }, `${FAULT_TEXT[run.scenario]} (${fig(run.fault_s, "s")})`));
      }
      tr.appendChild(el("th", { scope: "row" }, name));
      tr.insertCell().textContent = show(run.as_set);
      tr.insertCell().textContent = show(run.fix);
    });
  }
  wrap.appendChild(table);
  box.appendChild(wrap);
  const first = p.runs[0];
  const fix = el("div", { class: "whatif-fix" });
  if (first.fix_changes.length === 0) {
    fix.appendChild(el("p", {}, `The fix is the policy as set: ${first.no_fix || "nothing to change"}.`));
  } else {
    fix.appendChild(el("p", {}, "The fix:"));
    for (const c of first.fix_changes) {
      const item = el("div", { class: "fix-change", "data-code": c.code });
      item.appendChild(el("p", {}, `[${c.code}] ${c.change}`));
      const pre = el("pre", { class: "snippet", tabindex: "0", "aria-label": `snippet to paste for ${c.code}` });
      pre.appendChild(el("code", {}, c.snippet));
      item.appendChild(pre);
      fix.appendChild(item);
    }
  }
  box.appendChild(fix);
  const same = p.runs.filter((r) => r.same_because);
  if (same.length) {
    const ul = el("ul", { class: "notes whatif-same", "aria-label": "faults the fix does not change, and why" });
    for (const r of same) ul.appendChild(el("li", { "data-fault": r.scenario }, `${FAULT_TEXT[r.scenario]}: as set = fix: ${r.same_because}`));
    box.appendChild(ul);
  }
  const notes = [...new Set(p.runs.flatMap((r) => r.notes))];
  if (notes.length) {
    const ul = el("ul", { class: "notes", "aria-label": "what the runs could not express" });
    for (const n of notes) ul.appendChild(el("li", {}, n));
    box.appendChild(ul);
  }
  for (const run of p.runs) box.appendChild(whatifChart(run, i, w));
  return box;
}

// The load at the backend over one fault's run: a canvas described in words, a legend, and
// the same numbers as a table (each second's busiest point, at most 60 rows).
function whatifChart(run, i, w) {
  const chart = el("figure", { class: "chart-wrap whatif-chart-wrap", "data-fault": run.scenario });
  const peak = (xs) => Math.max(0, ...xs);
  const label = `Attempts per second at the backend during the ${run.scenario} ` +
    `(from ${fig(run.start_s, "s")} for ${fig(run.fault_s, "s")}): peak ${fig(peak(run.load.as_set))} as set, ` +
    `${fig(peak(run.load.fix))} with the fix, against a capacity of ${fig(w.capacity_rps)}`;
  chart.appendChild(el("figcaption", {}, `${run.policy}: ${run.scenario}`));
  const canvas = el("canvas", {
    class: "whatif-chart",
    role: "img",
    "data-index": String(i),
    "data-fault": run.scenario,
    "data-run": String(whatif.data.runs.indexOf(run)),
    "aria-label": label,
  });
  chart.appendChild(canvas);
  const legend = el("div", { class: "legend" });
  legend.innerHTML = '<span class="sw chosen"></span> as set <span class="sw fixline"></span> with the fix <span class="sw cap"></span> capacity <span class="sw outage"></span> the fault';
  chart.appendChild(legend);
  const details = el("details", {});
  details.appendChild(el("summary", {}, "the load as a table"));
  const wrap = el("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": `${run.policy}, ${run.scenario}: load over time (scrolls)` });
  const table = el("table", { class: "results whatif-load" });
  table.appendChild(el("caption", {}, "Attempts per second at the backend, the busiest moment of each interval"));
  const head = table.createTHead().insertRow();
  for (const h of ["from (s)", "as set", "with the fix"]) head.appendChild(el("th", { scope: "col" }, h));
  const tbody = table.createTBody();
  const n = run.load.as_set.length;
  const per = Math.max(1, Math.ceil(n / 60));
  for (let k = 0; k < n; k += per) {
    const tr = tbody.insertRow();
    tr.appendChild(el("th", { scope: "row" }, fig(k * run.load.bin_s)));
    tr.insertCell().textContent = fig(peak(run.load.as_set.slice(k, k + per)));
    tr.insertCell().textContent = fig(peak(run.load.fix.slice(k, k + per)));
  }
  wrap.appendChild(table);
  details.appendChild(wrap);
  chart.appendChild(details);
  return chart;
}

// Attempts per second at the backend, as set (red) over the fix (blue), the fault shaded
// and the capacity drawn, as `herd check --chart` draws them.
function drawWhatIfChart(canvas) {
  if (!whatif.data) return;
  const run = whatif.data.runs[Number(canvas.dataset.run)];
  if (!run) return;
  const capacity = whatif.data.whatif.capacity_rps;
  const { ctx, W, H } = sharpContext(canvas);
  ctx.clearRect(0, 0, W, H);
  const left = 56, top = 10, right = 24, bottom = 26;
  const pw = W - left - right, ph = H - top - bottom;
  const { as_set: set, fix, bin_s } = run.load;
  drawLoadChart(ctx, { left, top, pw, ph }, {
    n: Math.max(set.length, fix.length, 1),
    max: Math.max(capacity, ...set, ...fix, 1) * 1.05,
    step_s: bin_s,
    spans: [[run.start_s, run.start_s + run.fault_s]],
    capacity,
    // The fix over the configuration, thinner: where they agree, both show.
    series: [[set, "#e63946", 3], [fix, "#457b9d", 1.5]],
  });
  canvas.dataset.drawn = "chart";
}

$("#check-form").addEventListener("submit", (e) => {
  e.preventDefault();
  runCheck();
});
window.addEventListener("resize", debounce(() => {
  for (const canvas of document.querySelectorAll(".check-chart")) drawCheckChart(canvas);
  for (const canvas of document.querySelectorAll(".whatif-chart")) drawWhatIfChart(canvas);
}, 100));
loaders.check = () => { if (!check.examples) loadCheckExamples(); };

// ---------------------------------------------------------------- start
const initialScene = location.hash.slice(1);
showScene(initialScene in loaders ? initialScene : "storm");
