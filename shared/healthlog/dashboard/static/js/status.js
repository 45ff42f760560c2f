"use strict";
// Status: what `healthlog status` says (GET /api/status), the watch's rules first.
HL.start(async () => {
  const s = await HL.api("status");
  const { el } = HL;
  const card = (label, value, small) =>
    el("div", { class: "card" }, el("div", { class: "label", text: label }),
       el("div", { class: "value" + (small ? " small" : ""), text: value }));
  const total = Object.values(s.counts).reduce((a, b) => a + b, 0);
  // the watch's rules that hold (healthlog status --check), first: what needs doing
  const watch = [];
  if (s.watch !== null && s.watch !== undefined) {
    watch.push(el("h2", { text: "Watch" }));
    watch.push(s.watch.length
      ? el("ul", { class: "watch", id: "watch" }, ...s.watch.map((f) =>
          el("li", { class: "finding" },
            el("strong", { text: f.rule + (f.account ? " · " + f.account : "") }),
            el("span", { text: ": " + f.line }),
            el("p", { class: "advice", text: f.advice }))))
      : el("p", { id: "watch", text: "Every rule of the watch is quiet." }));
  }
  const parts = [
    ...watch,
    el("div", { class: "cards", id: "cards" },
      card("deliveries", HL.number(total, 0)),
      card("backlog (pending)", HL.number(s.backlog, 0)),
      card("oldest pending", HL.age(s.oldest_pending_age_s)),
      card("last delivery", HL.when(s.last_delivery), true),
      card("points in the showcase", HL.number(s.points, 0)),
      card("records", HL.number(Object.values(s.records).reduce((a, b) => a + b, 0), 0))),
    el("h2", { text: "Deliveries per status" }),
    HL.table(["status", "deliveries"],
      Object.entries(s.counts).map(([k, v]) => [
        el("a", { href: HL.link("/deliveries", { status: k }) }, HL.status(k)), HL.number(v, 0)]),
      [1]),
  ];
  parts.push(el("h2", { text: "Failures by class" }));
  const failures = Object.entries(s.failures);
  parts.push(failures.length
    ? HL.table(["class", "deliveries"], failures.map(([k, v]) => [k, HL.number(v, 0)]), [1])
    : el("p", { text: "No failed deliveries." }));
  parts.push(el("h2", { text: "Uncovered keys" }));
  const uncovered = Object.entries(s.uncovered);
  parts.push(uncovered.length
    ? HL.table(["key (kept in the archive, not folded)", "deliveries"],
        uncovered.map(([k, v]) => [k, HL.number(v, 0)]), [1])
    : el("p", { text: "Every key of every delivery is folded." }));
  const sections = Object.entries(s.records);
  if (sections.length) {
    parts.push(el("h2", { text: "Records per section" }));
    parts.push(HL.table(["section", "records"], sections.map(([k, v]) => [k, HL.number(v, 0)]), [1]));
  }
  HL.content(parts);
});
