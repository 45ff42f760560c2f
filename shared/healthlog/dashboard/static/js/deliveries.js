"use strict";
// Deliveries: newest first (GET /api/deliveries).
HL.start(async () => {
  const { el } = HL;
  const here = new URLSearchParams(window.location.search);
  const wanted = here.get("status") || "";
  const { deliveries } = await HL.api("deliveries", { status: wanted, limit: 500 });
  const filter = el("select", { id: "status" },
    ["", "pending", "parsed", "partial", "failed"].map((s) => el("option", { value: s, text: s || "every status" })));
  filter.value = wanted;
  filter.addEventListener("change", () => {
    if (filter.value) here.set("status", filter.value); else here.delete("status");
    window.location.search = here.toString();
  });
  HL.content(el("div", { class: "controls" }, el("label", {}, "status ", filter),
    el("span", { class: "advice", text: `${deliveries.length} shown, newest first` })),
    deliveries.length ? HL.table(["received", "status", "size", "points", "records", "uncovered keys", "failure", "body", ""],
      deliveries.map((d) => [HL.when(d.received_at), HL.status(d.status), HL.bytes(d.size),
        HL.number(d.points, 0), HL.number(d.records, 0), d.uncovered.join(", ") || "–", d.failure || "–",
        d.body_removed_at ? "removed " + d.body_removed_at.slice(0, 10) : "kept",
        el("a", { href: HL.link("/deliveries/" + encodeURIComponent(d.id)), text: "details" })]), [2, 3, 4])
      : el("p", { text: "No deliveries." }));
});
