"use strict";
// Metric: an interactive chart of one metric (GET /api/series), on a range as the Health
// app offers them (D W M 6M Y All, the server's reads.windows) or a zoom, which re-fetches
// the visible range at a resolution the server picks unless one is chosen here. The view
// is kept in the URL (range and until, or start and end), so a link reopens it.
HL.start(async () => {
  const { el } = HL;
  const metric = HL.data("metric");
  const here = new URLSearchParams(window.location.search);
  // a range as the Health app offers it (D W M 6M Y All, ending on `until`), or the
  // start and end a zoom chose; opened on M, the last month with data
  const state = { field: here.get("field") || "", source: here.get("source") || "",
                  resolution: here.get("resolution") || "", start: here.get("start"),
                  end: here.get("end"), range: here.get("range"), until: here.get("until") };
  if (!state.range && !(state.start && state.end)) state.range = "M";
  const day = here.get("day");
  // a real day only: Date.parse takes 2026-02-31 for March 3rd, the round trip does not
  const parsed = /^\d{4}-\d\d-\d\d$/.test(day || "") ? Date.parse(day + "T00:00:00Z") : NaN;
  const real = !Number.isNaN(parsed) && new Date(parsed).toISOString().slice(0, 10) === day;
  const told = Boolean(day) && !real;  // said once, kept over the first drawing
  if (told) {
    HL.say(`day: "${day}" is not a date (YYYY-MM-DD); showing the last month with data.`);
  } else if (day) {
    state.range = "D";  // the phone's day: /api/series reads it on the phone's clock
    state.until = day;
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
  const ranges = HL.rangeControl((range) => {
    state.range = range;
    state.start = state.end = null;
    // a span keeps the day it ends on; after a zoom, the day the zoom ends on
    if (zoomed && state.end) state.until = String(state.end).slice(0, 10);
    zoomed = false;
    load().catch(HL.fail);
  }, (range, until) => {
    state.range = range;
    state.until = until;
    load().catch(HL.fail);
  });
  HL.content(
    ranges.node,
    el("div", { class: "controls" },
      el("label", {}, "field ", field), el("label", {}, "source ", source),
      el("label", {}, "resolution ", resolution), info),
    el("p", { class: "advice" }, "stored as ", stored),
    chart,
    el("p", { class: "advice", text: "Drag to zoom, double-click to zoom out; the resolution follows the visible range." }));

  let drawn = false;
  let zoomed = false;
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
    const asked = { field: state.field, source: state.source, resolution: state.resolution };
    Object.assign(asked, state.range ? { range: state.range, until: state.until }
                                     : { start: state.start, end: state.end });
    HL.remember(asked);  // the view in the URL: a link reopens it
    const s = await HL.api("series", Object.assign({ metric }, asked));
    if (ticket !== busy) return; // a newer zoom is on its way
    const w = s.window;
    ranges.show(w, s.start, s.end);
    if (w) state.until = w.until;
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
    if (s.start && s.end) layout.xaxis.range = [s.start, s.end];
    await Plotly.react(chart, traces(s), layout, HL.plotConfig);
    if (!s.samples.length) HL.say("No points in this range.");
    else if (!told || drawn) HL.say("");
    if (!drawn) {
      drawn = true;
      chart.on("plotly_relayout", (change) => {
        let range = null;
        if (change["xaxis.autorange"]) {
          range = ["All", null, null];  // zoomed out: all of it
        } else if (change["xaxis.range[0]"] !== undefined) {
          range = [null, change["xaxis.range[0]"], change["xaxis.range[1]"]];
        } else if (Array.isArray(change["xaxis.range"])) {
          range = [null, ...change["xaxis.range"]];
        } else {
          return;  // not a zoom (a resize, a legend click)
        }
        // a zoom: the range it shows, not a span; the resolution follows it
        const text = (v) => (v === null ? null : String(v).replace(" ", "T"));
        [state.range, state.start, state.end] = [range[0], text(range[1]), text(range[2])];
        zoomed = !state.range;
        load().catch(HL.fail);
      });
    }
  }

  for (const [select, key] of [[source, "source"], [field, "field"], [resolution, "resolution"]]) {
    select.addEventListener("change", () => { state[key] = select.value; load().catch(HL.fail); });
  }
  await load();
});
