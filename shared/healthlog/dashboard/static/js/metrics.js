"use strict";
// Metrics: every metric field of the account (GET /api/catalog).
HL.start(async () => {
  const { metrics } = await HL.api("catalog");
  const { el } = HL;
  if (!metrics.length) {
    HL.say("No points yet: they appear after the first delivery is folded.");
    HL.content();
    return;
  }
  // the catalog's extent is the points' UTC starts (their offsets are not kept there)
  // a point sent without a source has "" for one: "(no source)", never a leading comma
  const named = (given) => {
    const sources = given.map((s) => s || "(no source)");
    return sources.length <= 3 ? sources.join(", ")
      : `${sources.slice(0, 3).join(", ")} and ${sources.length - 3} more`;
  };
  // a person's name and unit first; the stored metric, field and unit (the operator's
  // names, what the CLI and the API take) beside them
  HL.content(HL.table(
    ["name", "metric", "field", "unit", "stored unit", "kind", "points", "first (UTC)", "last (UTC)", "sources"],
    metrics.map((m) => [
      el("a", { href: HL.link("/metrics/" + encodeURIComponent(m.metric), { field: m.field }), text: m.display_name }),
      el("code", { class: "stored", text: m.metric }), m.field, m.display_unit || "–", m.unit,
      m.kind, HL.number(m.points, 0), HL.when(m.first), HL.when(m.last), named(m.sources) || "–"]),
    [6]));
});
