"use strict";
// Sleep (GET /api/sleep): the 7- and 30-day figures, a stacked bar a night (a night a
// category on the axis, so sparse nights keep wide bars) with the 7-day average as a
// line, and a table of the nights. The figures are the server's (reads/sleep_figures.py).
// The nights of a range as the Health app offers them (D W M 6M Y All, the last month by
// default), kept in the URL as the metric page's are.
HL.start(async () => {
  const here = new URLSearchParams(window.location.search);
  const state = { range: here.get("range") || "M", until: here.get("until") };
  const ranges = HL.rangeControl((range) => { state.range = range; draw().catch(HL.fail); },
    (range, until) => { state.range = range; state.until = until; draw().catch(HL.fail); });
  async function draw() {
    HL.remember({ range: state.range, until: state.until });
    const reply = await HL.api("sleep", { range: state.range, until: state.until });
    ranges.show(reply.window, reply.start, reply.end);
    if (reply.window) state.until = reply.window.until;
    await drawn(reply);
  }
  await draw();

  async function drawn({ nights, windows }) {
  const { el } = HL;
  if (!nights.length) {
    HL.say("No sleep data in this range (sleep_analysis).");
    HL.content(ranges.node);
    return;
  }
  HL.say("");
  const order = ["deep", "core", "rem", "asleep", "awake"];
  const colours = { deep: "#1f3f8f", core: "#2f6fdb", rem: "#7fb0ff", asleep: "#5a8f6f",
                    awake: "#f0a040" };
  // each column its own name: "asleep" is sleep without a stage, apart from the total
  const names = { deep: "Deep", core: "Core", rem: "REM", asleep: "Unstaged", awake: "Awake" };
  const stages = order.filter((s) => nights.some((n) => n.stages[s] !== undefined));
  const hours = (v) => (v === null || v === undefined ? "–" : HL.number(v) + " h");
  const minutes = (v) => (v === null || v === undefined ? "" : ` (± ${HL.number(v, 0)} min)`);

  const cards = el("div", { class: "cards", id: "figures" }, windows.map((w) => el("div", { class: "card" },
    el("div", { class: "label", text: `Last ${w.days} days · ${w.nights} ${w.nights === 1 ? "night" : "nights"}` }),
    el("div", { class: "value small", text: `Asleep ${hours(w.asleep_h)} · in bed ${hours(w.in_bed_h)}` }),
    el("div", { class: "bedtime", text: `Bedtime ${w.bedtime || "–"}${minutes(w.bedtime_sd_min)}` }),
    el("div", { class: "wake-time", text: `Wake time ${w.wake_time || "–"}${minutes(w.wake_time_sd_min)}` }))));

  const chart = el("div", { class: "chart", id: "chart" });
  const headers = ["Night", "In bed (h)", "Asleep (h)", ...stages.map((s) => names[s] + " (h)"),
                   "Bedtime", "Wake time", "7-day average (h)", "Source"];
  const rows = nights.slice().reverse().map((n) => [n.night, HL.number(n.in_bed_h), HL.number(n.asleep_h),
    ...stages.map((s) => HL.number(n.stages[s])), n.bedtime || "–", n.wake_time || "–",
    HL.number(n.asleep_7d_h), n.source || "(no source)"]);
  HL.content(ranges.node, cards, chart, el("p", { class: "advice", text:
      "± is the spread (standard deviation) of bedtime and wake time over the window's nights." }),
    el("h2", { text: "Nights" }),
    el("div", { class: "scroll" }, HL.table(headers, rows, [1, 2, ...stages.map((_, i) => i + 3), headers.length - 2])));

  const x = nights.map((n) => n.night);
  const traces = stages.map((s) => ({
    type: "bar", name: names[s], x, y: nights.map((n) => n.stages[s] || 0),
    marker: { color: colours[s] }, customdata: nights.map((n) => HL.plotText(n.source)),
    hovertemplate: `%{x}<br>${names[s]}: <b>%{y:.2f} h</b><br>%{customdata}<extra></extra>`,
  }));
  traces.push({
    type: "scatter", mode: "lines+markers", name: "7-day average asleep", x,
    y: nights.map((n) => n.asleep_7d_h), line: { color: "#1d2330", width: 2 }, marker: { size: 4 },
    hovertemplate: "%{x}<br>7-day average: <b>%{y:.2f} h</b><extra></extra>",
  });
  // a night a category: every bar as wide as the axis allows, however sparse the nights;
  // the last 60 shown at first, 14 on a phone (pan or zoom out for the others)
  const shownNights = chart.clientWidth < 600 ? 14 : 60;
  const xaxis = { type: "category", title: { text: "night (the morning it ends)" }, automargin: true };
  if (x.length > shownNights) xaxis.range = [x.length - shownNights - 0.5, x.length - 0.5];
  await Plotly.newPlot(chart, traces, Object.assign({}, HL.plotLayout, {
    barmode: "stack", bargap: 0.25, xaxis, yaxis: { title: { text: "hours" } },
    legend: { orientation: "h", y: 1.02, yanchor: "bottom" },
    margin: Object.assign({}, HL.plotLayout.margin, { t: 70 }),
  }), HL.plotConfig);
  }
});
