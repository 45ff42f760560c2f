"use strict";
// One delivery: headers as stored, outcome, what it folded, its body (GET /api/deliveries/<id>).
HL.start(async () => {
  const { el } = HL;
  const d = await HL.api("deliveries/" + encodeURIComponent(HL.data("delivery")));
  document.getElementById("title").textContent = "Delivery " + d.id;
  const rows = [["received", HL.when(d.received_at)], ["status", HL.status(d.status)],
    ["failure class", d.failure || "–"], ["uncovered keys", d.uncovered.join(", ") || "–"],
    ["points folded", HL.number(d.points, 0)],
    ["records it holds", HL.number(d.records, 0) + " (those no newer delivery sent again)"],
    ["folded at", HL.when(d.folded_at)],
    ["fold attempts in flight", String(d.attempts)], ["size", HL.bytes(d.size) + ` (${d.size} bytes)`],
    ["content type", d.content_type], ["archive key", d.archive_key]];
  const headers = Object.entries(d.headers);
  HL.content(
    el("dl", { class: "facts" }, rows.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", {}, v)])),
    el("h2", { text: "Headers as stored" }),
    headers.length ? HL.table(["header", "value (truncated as stored)"], headers)
      : el("p", { text: "No HAE headers were sent." }),
    el("h2", { text: "Body" }),
    d.body_removed_at
      // retention deleted it on purpose: say so, instead of a link that cannot work
      ? el("p", { id: "body-removed", text: "Removed by healthlog retention on "
          + d.body_removed_at.slice(0, 10) + " (UTC), as it was told to: the archive no "
          + "longer has it. What its fold wrote (points, records) stays." })
      : el("p", {}, el("a", { class: "button", id: "body", href: HL.link(d.body_url), download: d.id, text: "Download the body as archived" })));
});
