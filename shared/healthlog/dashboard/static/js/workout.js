"use strict";
// One workout: its heart rate and its route as a line of lon/lat, no map tiles
// (GET /api/workouts/<identity>).
HL.start(async () => {
  const { el } = HL;
  const w = await HL.api("workouts/" + encodeURIComponent(HL.data("identity")));
  document.getElementById("title").textContent = w.name || "Workout";
  const r = w.route_summary;
  // what the phone sent ({qty, units}, or a bare number), else what the route gives: a
  // route of one fix or none gives nothing
  const sent = (value) => (value && typeof value === "object" && typeof value.qty === "number")
    ? `${HL.number(value.qty, 2)} ${value.units || ""}`.trim()
    : (typeof value === "number" ? HL.number(value, 2) : null);
  const body = w.body || {};
  const routed = r.points > 1;
  const facts = el("dl", { class: "facts" }, [
    ["start", HL.when(w.start)], ["end", HL.when(w.end)], ["source", w.source || "–"],
    ["location", w.location || "–"], ["route points", HL.number(r.points, 0)],
    ["distance", sent(body.distance)
      || (routed ? HL.number(r.distance_m / 1000, 2) + " km (from the route)" : "–")],
    ["elevation gain", sent(body.elevationUp)
      || (routed ? HL.number(r.elevation_gain_m, 0) + " m (from the route)" : "–")],
    ["series", w.series.join(", ") || "–"],
  ].flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: v })]));
  const hr = el("div", { class: "chart small", id: "heart-rate" });
  const route = el("div", { class: "chart route", id: "route" });
  HL.content(facts, el("div", { class: "grid2" },
    el("div", {}, el("h2", { text: "Heart rate" }), hr),
    el("div", {}, el("h2", { text: "Route" }), route)));
  if (w.heart_rate.length) {
    const unit = HL.plotText(w.heart_rate[0].display_unit || w.heart_rate[0].unit || "bpm");  // text, not plotly's markup
    await Plotly.newPlot(hr, [{
      // a lone reading is a marker: a line of one point draws nothing
      type: "scatter", mode: w.heart_rate.length > 1 ? "lines" : "markers", name: "heart rate",
      x: w.heart_rate.map((p) => p.t),
      y: w.heart_rate.map((p) => p.qty), line: { color: "#c93c3c" },
      hovertemplate: `%{x}<br><b>%{y} ${unit}</b><br>${HL.plotText(w.source)}<extra></extra>`,
    }], Object.assign({}, HL.plotLayout, { xaxis: { type: "date" }, yaxis: { title: { text: unit } } }),
    HL.plotConfig);
  } else {
    hr.replaceChildren(el("p", { class: "loading", text: "No heart-rate series in this workout." }));
  }
  if (w.route.length) {
    const lat = w.route.reduce((a, p) => a + p.lat, 0) / w.route.length;
    await Plotly.newPlot(route, [{
      type: "scatter", mode: w.route.length > 1 ? "lines" : "markers", name: "route",
      x: w.route.map((p) => p.lon), y: w.route.map((p) => p.lat),
      customdata: w.route.map((p) => p.alt), line: { color: "#2f6fdb", width: 3 },
      hovertemplate: "lon %{x:.5f}, lat %{y:.5f}<br>altitude %{customdata} m<extra></extra>",
    }], Object.assign({}, HL.plotLayout, {
      // a degree of longitude is cos(lat) of a degree of latitude: keep the shape true
      xaxis: { title: { text: "longitude" }, scaleanchor: "y", scaleratio: Math.cos((lat * Math.PI) / 180) },
      yaxis: { title: { text: "latitude" } },
    }), HL.plotConfig);
  } else {
    route.replaceChildren(el("p", { class: "loading", text: "No route in this workout (indoor, or sent without one)." }));
  }
});
