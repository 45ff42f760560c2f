"use strict";
// Coverage: a calendar per metric (a cell a day), its gaps and what to re-send, late points
// (GET /api/coverage).
HL.start(async () => {
  const { metrics } = await HL.api("coverage");
  const { el } = HL;
  if (!metrics.length) {
    HL.say("No points yet: the calendar fills in as deliveries are folded.");
    HL.content();
    return;
  }
  const day = 86400000;
  const iso = (t) => new Date(t).toISOString().slice(0, 10);
  const legend = el("div", { class: "legend" },
    el("span", {}, el("i", {}), "no data"), el("span", {}, el("i", { class: "d3" }), "points (darker: more)"),
    el("span", {}, el("i", { class: "gap" }), "gap (a day without data)"),
    el("span", {}, el("i", { class: "late" }), "late samples"));
  const blocks = metrics.map((m) => {
    const gapDays = new Set();
    for (const g of m.gaps) {
      for (let t = Date.parse(g.first); t <= Date.parse(g.last); t += day) gapDays.add(iso(t));
    }
    const peak = Math.max(...Object.values(m.days));
    const first = Date.parse(m.first_day);
    const last = Date.parse(m.last_day);
    const cells = [];
    const months = [];
    const weekday = (new Date(first).getUTCDay() + 6) % 7; // Monday first
    for (let i = 0; i < weekday; i++) cells.push(el("span", { class: "pad" }));
    for (let t = first; t <= last; t += day) {
      const d = iso(t);
      const column = Math.floor(cells.length / 7);
      if (t === first || d.endsWith("-01")) {
        const label = el("span", { text: new Date(t).toLocaleString("en", { month: "short", year: "numeric", timeZone: "UTC" }) });
        label.style.left = column * 16 + "px"; // a column is 13 px and a 3 px gap
        months.push(label);
      }
      const n = m.days[d] || 0;
      const late = m.late[d] || 0;
      const level = n ? 1 + Math.min(3, Math.floor((4 * n) / (peak + 1))) : 0;
      const classes = [n ? "d" + level : "", gapDays.has(d) ? "gap" : "", late ? "late" : ""];
      let title = d + ": " + (n ? n + " points" : "no data");
      if (gapDays.has(d)) title += " (gap)";
      if (late) title += ", " + late + " late";
      cells.push(el("a", {
        class: classes.filter(Boolean).join(" ") || "none",
        href: HL.link("/metrics/" + encodeURIComponent(m.metric), { day: d }),
        title, "data-day": d, "data-points": String(n), "aria-label": title,
      }));
    }
    const block = el("section", { class: "metric-block", "data-metric": m.metric },
      el("h2", {}, el("a", { href: HL.link("/metrics/" + encodeURIComponent(m.metric)), text: m.display_name || m.metric }),
        " ", el("code", { class: "stored", text: m.metric })),
      el("div", { class: "advice", text:
        `${m.days_with_data} days with data, ${m.first_day} to ${m.last_day}` +
        (m.daily ? "" : " (not daily: days without data are not gaps)") +
        (m.late_points ? `; ${m.late_points} late samples` : "") }),
      el("div", { class: "months" }, months),
      el("div", { class: "calendar-row" },
        el("div", { class: "weekdays" }, ["Mon", "", "Wed", "", "Fri", "", "Sun"].map((w) => el("span", { text: w }))),
        el("div", { class: "calendar" }, cells)));
    if (m.gaps.length) {
      block.append(el("h3", { text: "Gaps" }), el("ul", { class: "gaps" }, m.gaps.map((g) =>
        el("li", { "data-gap": g.first + "/" + g.last },
          el("strong", { text: g.first === g.last ? g.first : `${g.first} – ${g.last}` }),
          ` (${g.days} day${g.days > 1 ? "s" : ""}). `,
          el("span", { class: "advice", text: g.resend })))));
    }
    const late = Object.entries(m.late);
    if (late.length) {
      block.append(el("h3", { text: "Late samples" }),
        el("p", { class: "advice", text: "Points that arrived in a delivery sent well after the day they were taken:" }),
        HL.table(["day", "late points"], late.sort().map(([d, n]) => [d, HL.number(n, 0)]), [1]));
    }
    return block;
  });
  HL.content(legend, blocks);
});
