"use strict";
// Records of the other sections (GET /api/sections, /api/records/<section>): a column a
// field the section sent, as the server shapes it (reads/shapes.py record_dict: fields,
// labels, units, source_name); an ECG's voltage trace, a notification's heart rates and an
// HRV reading's beats with ?items=1.
HL.start(async () => {
  const { el } = HL;
  const { sections } = await HL.api("sections");
  const shown = sections.filter((s) => s.section !== "workouts");
  if (!shown.length) {
    HL.say("No records of other sections yet (state of mind, medications, symptoms, cycle tracking, ECG, heart-rate notifications).");
    HL.content();
    return;
  }
  const here = new URLSearchParams(window.location.search);
  const select = el("select", { id: "section" },
    shown.map((s) => el("option", { value: s.section, text: `${s.label} (${s.records})` })));
  select.value = shown.some((s) => s.section === here.get("section")) ? here.get("section") : shown[0].section;
  const list = el("div", { id: "records" });
  HL.content(el("div", { class: "controls" }, el("label", {}, "section ", select)), list);

  // the sections whose series the page shows (small ones, and the ECG's trace)
  const withItems = new Set(["ecg", "heartRateNotifications", "heartbeatSeries"]);
  const MOST = 30;  // the items of a list shown before "… (N in all)"

  // a value as sent, for people: a list as its items, an object as its fields
  function text(value) {
    if (value === null || value === undefined || value === "") return "–";
    if (typeof value === "boolean") return value ? "yes" : "no";
    if (typeof value === "number") return HL.number(value, 4);
    if (Array.isArray(value)) {
      if (!value.length) return "–";
      const head = value.slice(0, MOST).map(text).join(value.some((v) => v && typeof v === "object") ? "; " : ", ");
      return value.length > MOST ? `${head} … (${value.length} in all)` : head;
    }
    if (typeof value === "object") {
      const parts = Object.entries(value).map(([k, v]) => `${k}: ${text(v)}`);
      return parts.length ? parts.join(", ") : "–";
    }
    return String(value);
  }
  function cell(field) {
    if (!field) return "";
    const shownValue = text(field.value);
    return field.unit && shownValue !== "–" ? `${shownValue} ${field.unit}` : shownValue;
  }
  function when(r) {
    const start = HL.when(r.start);
    return r.end && r.end !== r.start ? `${start} – ${HL.when(r.end)}` : start;
  }

  async function show() {
    const section = select.value;
    const found = await HL.api("records/" + encodeURIComponent(section), { items: withItems.has(section) ? "1" : "" });
    const { records, columns } = found;
    const rows = records.slice().reverse().map((r) => {
      const byField = Object.fromEntries(r.fields.map((f) => [f.field, f]));
      return [when(r), ...columns.map((c) => cell(byField[c.field])), r.source_name || "–"];
    });
    const parts = [el("div", { class: "scroll" },
      HL.table(["Time", ...columns.map((c) => c.label), "Source"], rows))];
    if (section === "ecg") {
      const traced = records.filter((r) => r.series && r.series.voltage);
      for (const r of traced.slice(-3).reverse()) {
        const box = el("div", { class: "chart small ecg" });
        parts.push(el("h2", { text: `ECG ${HL.when(r.start)} · ${r.name || ""}` }), box);
        const v = r.series.voltage;
        const t0 = Date.parse(v[0].t);
        const unit = HL.plotText(v[0].unit || "mcV");  // text, not plotly's markup
        setTimeout(() => Plotly.newPlot(box, [{
          type: "scatter", mode: "lines", name: "voltage",
          x: v.map((p) => (Date.parse(p.t) - t0) / 1000), y: v.map((p) => p.qty),
          line: { color: "#c93c3c", width: 1 },
          hovertemplate: `%{x:.3f} s<br><b>%{y} ${unit}</b><extra></extra>`,
        }], Object.assign({}, HL.plotLayout, { xaxis: { title: { text: "seconds" } },
            yaxis: { title: { text: unit } } }), HL.plotConfig), 0);
      }
    }
    list.replaceChildren(...parts);
  }
  select.addEventListener("change", () => {
    const params = new URLSearchParams(window.location.search);
    params.set("section", select.value);
    history.replaceState(null, "", "?" + params.toString());
    show().catch(HL.fail);
  });
  await show();
});
