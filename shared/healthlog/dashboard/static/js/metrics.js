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
  HL.content(HL.table(
    ["metric", "field", "unit", "kind", "points", "first", "last", "sources"],
    metrics.map((m) => [
      el("a", { href: HL.link("/metrics/" + encodeURIComponent(m.metric), { field: m.field }), text: m.metric }),
      m.field, m.unit, m.kind, HL.number(m.points, 0), HL.when(m.first), HL.when(m.last),
      m.sources.length]),
    [4, 7]));
});
