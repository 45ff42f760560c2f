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
  const named = (sources) => sources.length <= 3 ? sources.join(", ")
    : `${sources.slice(0, 3).join(", ")} and ${sources.length - 3} more`;
  HL.content(HL.table(
    ["metric", "field", "unit", "kind", "points", "first (UTC)", "last (UTC)", "sources"],
    metrics.map((m) => [
      el("a", { href: HL.link("/metrics/" + encodeURIComponent(m.metric), { field: m.field }), text: m.metric }),
      m.field, m.unit, m.kind, HL.number(m.points, 0), HL.when(m.first), HL.when(m.last),
      named(m.sources) || "–"]),
    [4]));
});
