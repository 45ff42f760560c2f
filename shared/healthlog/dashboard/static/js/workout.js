"use strict";
// One workout as the Health app's Fitness view shows it: its figures in the account's
// units, its splits and heart-rate zones, its heart rate, and its route as a line of
// lon/lat at true proportions, no map tiles (GET /api/workouts/<identity>). Every number
// is the API's (healthlog.reads.figures); this page only writes them out.
HL.start(async () => {
  const { el } = HL;
  const w = await HL.api("workouts/" + encodeURIComponent(HL.data("identity")));
  document.getElementById("title").textContent = w.name || "Workout";
  const f = w.figures;
  const order = ["duration", "distance", "active_energy", "total_energy", "avg_heart_rate",
    "max_heart_rate", "pace", "speed", "elevation_gain", "steps", "step_cadence",
    "swim_cadence", "temperature", "humidity", "intensity"];
  const digits = { distance: 2, speed: 1, temperature: 1, intensity: 1 };
  const hearts = new Set(["avg_heart_rate", "max_heart_rate"]);
  // a figure ({value, unit, basis}) as a person reads it, and where it comes from when
  // that is not the workout's summary (a heart rate from its series is the rule: unsaid)
  const text = (key, x) => {
    const said = x.unit === "s" ? HL.clock(x.value)
      : x.unit.startsWith("s/") ? `${HL.clock(x.value)} /${x.unit.slice(2)}`
        : `${HL.number(x.value, digits[key] ?? 0)} ${x.unit}`.trim();
    if (x.basis === "route") return said + " (from the route)";
    if (x.basis === "series" && !hearts.has(key)) return said + " (from its samples)";
    return said;
  };
  const figures = order.filter((key) => f[key])
    .map((key) => [f[key].display_name.toLowerCase(), text(key, f[key])]);
  const r = w.route_summary;
  const facts = el("dl", { class: "facts", id: "figures", "data-units": w.unit_system }, [
    ["start", HL.when(w.start)], ["end", HL.when(w.end)], ["source", w.source || "–"],
    ["location", w.location || "–"], ...figures, ["route points", HL.number(r.points, 0)],
    ["series", w.series.join(", ") || "–"],
  ].flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: v })]));

  const unit = w.splits.length ? w.splits[0].unit : (w.unit_system === "imperial" ? "mi" : "km");
  const splits = w.splits.length
    ? el("div", { class: "scroll" }, HL.table(
      ["split", `distance (${unit})`, "time", `pace (/${unit})`],
      w.splits.map((s) => [String(s.split), HL.number(s.distance, 2), HL.clock(s.duration_s),
        HL.clock(s.pace)]), [0, 1, 2, 3]))
    : el("p", { class: "loading", text: "No splits: the workout has no route of two fixes or more." });
  splits.id = "splits";
  const z = w.heart_rate_zones;
  const range = (zone) => zone.low_bpm === null ? `under ${HL.number(zone.high_bpm, 0)}`
    : zone.high_bpm === null ? `${HL.number(zone.low_bpm, 0)} and over`
      : `${HL.number(zone.low_bpm, 0)}–${HL.number(zone.high_bpm, 0)}`;
  const zones = z
    ? el("div", { class: "scroll" }, HL.table(["zone", "heart rate (bpm)", "time", "share"],
      z.zones.map((zone) => [String(zone.zone), range(zone), HL.clock(zone.seconds),
        HL.number(zone.share * 100, 0) + " %"]), [0, 2, 3]),
      el("p", { class: "advice", text: `Shares of ${HL.number(z.max_bpm, 0)} bpm, the highest heart rate of this account's workouts.` }))
    : el("p", { class: "loading", text: "No heart-rate zones: no heart-rate series in this workout." });
  zones.id = "zones";

  const hr = el("div", { class: "chart small", id: "heart-rate" });
  const route = el("div", { class: "chart route", id: "route" });
  HL.content(facts,
    el("div", { class: "grid2" },
      el("div", {}, el("h2", { text: "Heart rate" }), hr),
      el("div", {}, el("h2", { text: "Route" }), route)),
    el("div", { class: "grid2" },
      el("div", {}, el("h2", { text: "Splits" }), splits),
      el("div", {}, el("h2", { text: "Heart-rate zones" }), zones)));
  if (w.heart_rate.length) {
    const bpm = HL.plotText(w.heart_rate[0].display_unit || w.heart_rate[0].unit || "bpm");  // text, not plotly's markup
    await Plotly.newPlot(hr, [{
      // a lone reading is a marker: a line of one point draws nothing
      type: "scatter", mode: w.heart_rate.length > 1 ? "lines" : "markers", name: "heart rate",
      x: w.heart_rate.map((p) => p.t),
      y: w.heart_rate.map((p) => p.qty), line: { color: "#c93c3c" },
      hovertemplate: `%{x}<br><b>%{y} ${bpm}</b><br>${HL.plotText(w.source)}<extra></extra>`,
    }], Object.assign({}, HL.plotLayout, { xaxis: { type: "date" }, yaxis: { title: { text: bpm } } }),
    HL.plotConfig);
  } else {
    hr.replaceChildren(el("p", { class: "loading", text: f.avg_heart_rate
      ? "No heart-rate series in this workout: its average and maximum above are the summary the phone sent."
      : "No heart-rate series in this workout." }));
  }
  if (w.route.length) {
    const lons = w.route.map((p) => p.lon), lats = w.route.map((p) => p.lat);
    const lat = lats.reduce((a, b) => a + b, 0) / lats.length;
    const cos = Math.cos((lat * Math.PI) / 180);
    // a square around the route, in degrees of latitude, its sides 10 % longer than the
    // route's longer side (a route due north has no width to autoscale from); plotly
    // widens one axis to the box's shape, the ratio stays
    const [west, east] = [Math.min(...lons), Math.max(...lons)];
    const [south, north] = [Math.min(...lats), Math.max(...lats)];
    const half = Math.max(north - south, (east - west) * cos, 0.001) * 0.55;
    const [midLon, midLat] = [(west + east) / 2, (south + north) / 2];
    const up = HL.plotText(w.elevation_unit);
    await Plotly.newPlot(route, [{
      type: "scatter", mode: w.route.length > 1 ? "lines" : "markers", name: "route",
      x: w.route.map((p) => p.lon), y: w.route.map((p) => p.lat),
      customdata: w.route.map((p) => p.elevation), line: { color: "#2f6fdb", width: 3 },
      hovertemplate: `lon %{x:.5f}, lat %{y:.5f}<br>altitude %{customdata:.0f} ${up}<extra></extra>`,
    }], Object.assign({}, HL.plotLayout, {
      // a degree of longitude is cos(lat) of a degree of latitude: keep the shape true, at
      // any width (the y range grows to fit when the chart is narrow)
      xaxis: { title: { text: "longitude" }, scaleanchor: "y", scaleratio: cos,
        range: [midLon - half / cos, midLon + half / cos] },
      yaxis: { title: { text: "latitude" }, range: [midLat - half, midLat + half] },
    }), HL.plotConfig);
  } else {
    route.replaceChildren(el("p", { class: "loading", text: "No route in this workout (indoor, or sent without one)." }));
  }
});
