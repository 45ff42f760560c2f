"use strict";
// Metric: an interactive chart of one metric (GET /api/series). Zooming re-fetches the
// visible range, whose resolution the server picks unless one is chosen here.
HL.start(async () => {
  const { el } = HL;
  const metric = HL.data("metric");
  const here = new URLSearchParams(window.location.search);
  const state = { field: here.get("field") || "", source: here.get("source") || "",
                  resolution: here.get("resolution") || "", start: null, end: null };
  const day = here.get("day");
  // a real day only: Date.parse takes 2026-02-31 for March 3rd, the round trip does not
  const parsed = /^\d{4}-\d\d-\d\d$/.test(day || "") ? Date.parse(day + "T00:00:00Z") : NaN;
  const real = !Number.isNaN(parsed) && new Date(parsed).toISOString().slice(0, 10) === day;
  const told = Boolean(day) && !real;  // said once, kept over the first drawing
  if (told) {
    HL.say(`day: "${day}" is not a date (YYYY-MM-DD); showing the whole range.`);
  } else if (day) {
    state.start = day;  // the phone's day: /api/series reads it on the phone's clock
    state.end = new Date(parsed + 86400000).toISOString().slice(0, 10);
  }
  const chart = el("div", { class: "chart", id: "chart" });
  const source = el("select", { id: "source" }, el("option", { value: "", text: "all sources" }));
  const field = el("select", { id: "field" });
  const resolution = el("select", { id: "resolution" },
    ["", "raw", "minute", "hour", "day", "week", "month"].map((r) =>
      el("option", { value: r, text: r || "auto (from the range)" })));
  resolution.value = state.resolution;
  const info = el("span", { id: "info", class: "advice" });
  const stored = el("code", { id: "stored", title: "the stored metric, field and unit" });
  const whole = el("button", { type: "button", id: "whole", text: "whole range" });
  HL.content(
    el("div", { class: "controls" },
      el("label", {}, "field ", field), el("label", {}, "source ", source),
      el("label", {}, "resolution ", resolution), whole, info),
    el("p", { class: "advice" }, "stored as ", stored),
    chart,
    el("p", { class: "advice", text: "Drag to zoom, double-click to zoom out; the resolution follows the visible range." }));

  let drawn = false;
  let busy = 0;

  const widths = { minute: 60e3, hour: 3600e3, day: 86400e3, week: 7 * 86400e3 };
  // how a hover writes a sample's time: to the second for a raw point, as fine as its
  // bucket otherwise (plotly's default for a date axis may say the day alone)
  const hoverTimes = { raw: "%Y-%m-%d %H:%M:%S", minute: "%Y-%m-%d %H:%M", hour: "%Y-%m-%d %H:%M",
                       day: "%Y-%m-%d", week: "week of %Y-%m-%d", month: "%B %Y" };

  // a bucket missing between two others breaks the line: a gap in the data shows
  function withBreaks(s) {
    const width = widths[s.resolution];
    if (!width || s.kind === "cumulative") return s.samples;
    const out = [];
    for (const p of s.samples) {
      const last = out[out.length - 1];
      if (last && Date.parse(p.t) - Date.parse(last.t) > 1.5 * width) {
        out.push({ t: last.t, value: null, min: null, max: null, count: 0, gap: true });
      }
      out.push(p);
    }
    return out;
  }

  // the samples with a band between the gaps withBreaks marks, a list a run
  function runs(samples) {
    const out = [[]];
    for (const p of samples) {
      if (p.gap) out.push([]);
      else if (p.min !== null && p.max !== null) out[out.length - 1].push(p);
    }
    return out.filter((run) => run.length);
  }

  function traces(series) {
    const s = Object.assign({}, series, { samples: withBreaks(series) });
    const label = state.source || (s.resolution === "raw" ? null : "all sources");
    const x = s.samples.map((p) => p.t);
    // data strings, as text for plotly (HL.plotText): the hover's source and unit
    const sources = s.samples.map((p) => HL.plotText(p.source || label || ""));
    const unit = HL.plotText(s.display_unit);
    if (s.kind === "cumulative") {
      return [{
        type: "bar", name: "sum", x, y: s.samples.map((p) => p.value), customdata: sources,
        xhoverformat: hoverTimes[s.resolution],
        marker: { color: "#2f6fdb" },
        hovertemplate: `%{x}<br><b>%{y} ${unit}</b><br>%{customdata}<extra>${s.resolution}</extra>`,
      }];
    }
    const band = s.resolution !== "raw";
    const out = [];
    if (band) {
      // the band a closed shape per run of buckets between two gaps: filled to the
      // trace before it, a band would bridge a gap and lean on the wrong edge there
      for (const run of runs(s.samples)) {
        out.push({ type: "scatter", mode: "lines", name: "min–max",
                   x: run.map((p) => p.t).concat(run.map((p) => p.t).reverse()),
                   y: run.map((p) => p.max).concat(run.map((p) => p.min).reverse()),
                   fill: "toself", fillcolor: "rgba(47,111,219,0.18)", line: { width: 0 },
                   hoverinfo: "skip", showlegend: !out.length, legendgroup: "band" });
      }
    }
    out.push({
      type: "scatter", mode: s.samples.length > 400 ? "lines" : "lines+markers",
      name: band ? "average" : "value", x, y: s.samples.map((p) => p.value),
      xhoverformat: hoverTimes[s.resolution],
      customdata: s.samples.map((p, i) => [sources[i], p.min, p.max, p.count]),
      line: { color: "#2f6fdb", width: 2 }, marker: { size: 5 },
      hovertemplate: band
        ? `%{x}<br><b>%{y} ${unit}</b> average (%{customdata[1]}–%{customdata[2]})` +
          `<br>%{customdata[3]} points · %{customdata[0]}<extra>${s.resolution}</extra>`
        : `%{x}<br><b>%{y} ${unit}</b><br>%{customdata[0]}<extra>raw</extra>`,
    });
    return out;
  }

  async function load() {
    const ticket = ++busy;
    const s = await HL.api("series", { metric, field: state.field, source: state.source,
      resolution: state.resolution, start: state.start, end: state.end });
    if (ticket !== busy) return; // a newer zoom is on its way
    if (!field.options.length) {
      // a person's name for each field, the stored one beside it (the API's both)
      for (const f of s.fields) {
        const named = (s.display_fields || {})[f];
        field.append(el("option", { value: f, text: named && named !== f ? `${named} (${f})` : f }));
      }
      for (const name of s.sources) source.append(el("option", { value: name, text: name || "(no source)" }));
      field.value = s.field;
      source.value = state.source;
    }
    // a person's name and unit in the title, the stored ones beside it for an operator
    const unitShown = s.display_unit ? ` (${s.display_unit})` : "";
    document.getElementById("title").textContent = s.display_name + unitShown;
    stored.textContent = `${metric} · ${s.field} (${s.unit})`;
    info.textContent = `${s.samples.length} ${s.resolution === "raw" ? "points" : s.resolution + " buckets"}` +
      `, ${s.kind}` + (s.truncated ? " (truncated: zoom in for the rest)" : "");
    chart.dataset.resolution = s.resolution;
    chart.dataset.count = String(s.samples.length);
    const layout = Object.assign({}, HL.plotLayout, {
      xaxis: { type: "date", title: { text: "phone's local time" } },
      yaxis: { title: { text: HL.plotText(s.display_unit || s.display_name) }, rangemode: s.kind === "cumulative" ? "tozero" : "normal" },
      showlegend: s.kind !== "cumulative", legend: { orientation: "h", y: 1.08 },
      bargap: 0.15, uirevision: "keep",
    });
    if (state.start && state.end) layout.xaxis.range = [state.start, state.end];
    await Plotly.react(chart, traces(s), layout, HL.plotConfig);
    if (!s.samples.length) HL.say("No points in this range.");
    else if (!told || drawn) HL.say("");
    if (!drawn) {
      drawn = true;
      chart.on("plotly_relayout", (change) => {
        if (change["xaxis.autorange"]) {
          state.start = state.end = null;
        } else if (change["xaxis.range[0]"] !== undefined) {
          state.start = String(change["xaxis.range[0]"]).replace(" ", "T");
          state.end = String(change["xaxis.range[1]"]).replace(" ", "T");
        } else if (Array.isArray(change["xaxis.range"])) {
          [state.start, state.end] = change["xaxis.range"].map((v) => String(v).replace(" ", "T"));
        } else {
          return;
        }
        load().catch(HL.fail);
      });
    }
  }

  for (const [select, key] of [[source, "source"], [field, "field"], [resolution, "resolution"]]) {
    select.addEventListener("change", () => { state[key] = select.value; load().catch(HL.fail); });
  }
  whole.addEventListener("click", () => { state.start = state.end = null; load().catch(HL.fail); });
  await load();
});
