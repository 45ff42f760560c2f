"use strict";
// Sleep: hours per stage, a stacked bar a night (GET /api/sleep).
HL.start(async () => {
  const { el } = HL;
  const { nights } = await HL.api("sleep");
  if (!nights.length) {
    HL.say("No sleep data yet (sleep_analysis).");
    HL.content();
    return;
  }
  const order = ["deep", "core", "rem", "asleep", "awake", "in_bed"];
  const colours = { deep: "#1f3f8f", core: "#2f6fdb", rem: "#7fb0ff", asleep: "#5a8f6f",
                    awake: "#f0a040", in_bed: "#c8cdd8" };
  // each column its own name: "asleep" is sleep without a stage, apart from the total
  const names = { deep: "deep", core: "core", rem: "REM", asleep: "asleep, no stage",
                  awake: "awake", in_bed: "in bed" };
  const stages = order.filter((s) => nights.some((n) => n.stages[s] !== undefined));
  const chart = el("div", { class: "chart", id: "chart" });
  HL.content(chart, el("h2", { text: "Nights" }), HL.table(
    ["night", "total asleep (h)", ...stages.map((s) => names[s] + " (h)"), "from", "to", "source"],
    nights.slice().reverse().map((n) => [n.night, HL.number(n.asleep_h),
      ...stages.map((s) => HL.number(n.stages[s])), HL.when(n.start), HL.when(n.end), n.source || "(no source)"]),
    [1, ...stages.map((_, i) => i + 2)]));
  const traces = stages.filter((s) => s !== "in_bed").map((s) => ({
    type: "bar", name: names[s], x: nights.map((n) => n.night), y: nights.map((n) => n.stages[s] || 0),
    marker: { color: colours[s] }, customdata: nights.map((n) => HL.plotText(n.source)),
    hovertemplate: `%{x}<br>${names[s]}: <b>%{y:.2f} h</b><br>%{customdata}<extra></extra>`,
  }));
  await Plotly.newPlot(chart, traces, Object.assign({}, HL.plotLayout, {
    barmode: "stack", xaxis: { type: "date", title: { text: "night (the morning it ends)" } },
    yaxis: { title: { text: "hours" } }, legend: { orientation: "h", y: 1.08 },
  }), HL.plotConfig);
});
