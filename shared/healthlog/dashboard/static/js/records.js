"use strict";
// Records of the other sections (GET /api/sections, /api/records/<section>); an ECG's
// voltage trace with ?items=1.
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

  const summary = (body) => Object.entries(body)
    .filter(([, v]) => v !== null && typeof v !== "object")
    .slice(0, 6).map(([k, v]) => `${k}: ${v}`).join(" · ");

  async function show() {
    const section = select.value;
    const { records } = await HL.api("records/" + encodeURIComponent(section), { items: section === "ecg" ? "1" : "" });
    const parts = [HL.table(["start", "name", "details", "source"],
      records.slice().reverse().map((r) => [HL.when(r.start), r.name || "–", summary(r.body), r.source || "–"]))];
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
