"use strict";
// Coverage over a range (GET /api/coverage): a row of days per metric, in one scroll
// container with its month labels, opened on the most recent days; then a table with,
// per metric, its days with data, its gaps and its late samples, each list on demand.
// The range is the page's URL: days=N (ending on the last day with data; 90 without
// one), days=all, or start/end as every endpoint reads them.
HL.start(async () => {
  const { el } = HL;
  const here = new URLSearchParams(window.location.search);
  const asked = {};
  if (here.get("start") || here.get("end")) {
    asked.start = here.get("start");
    asked.end = here.get("end");
  } else {
    asked.days = here.get("days") || "90";
  }
  const reply = await HL.api("coverage", asked);
  const { metrics } = reply;
  const day = 86400000;
  const iso = (t) => new Date(t).toISOString().slice(0, 10);
  const plural = (n, one) => `${HL.number(n, 0)} ${one}${n === 1 ? "" : "s"}`;

  // the range: presets (links: a link reopens the same view) and a form for two days
  const presets = [["90", "90 days"], ["182", "6 months"], ["365", "1 year"], ["all", "all"]];
  const chosen = asked.days || null;
  const range = el("div", { class: "controls coverage-range" },
    el("span", { class: "advice", text: "range:" }),
    presets.map(([days, label]) => el("a", {
      href: HL.link("/coverage", { days }), text: label, "data-days": days,
      class: chosen === days ? "preset active" : "preset",
      "aria-current": chosen === days ? "page" : null,
    })));
  const from = el("input", { type: "date", id: "range-from", "aria-label": "from", value: reply.first_day || "" });
  const to = el("input", { type: "date", id: "range-to", "aria-label": "to", value: reply.last_day || "" });
  const form = el("form", { class: "range-form" }, from, " to ", to, " ", el("button", { type: "submit", text: "show" }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const params = {};
    if (from.value) params.start = from.value;
    if (to.value) params.end = iso(Date.parse(to.value) + day); // "to" is in: end is the day after
    window.location.assign(HL.link("/coverage", params));
  });
  range.append(form);

  if (!metrics.length) {
    HL.say(reply.last_data_day
      ? "No data in this range: choose a longer one."
      : "No points yet: the calendar fills in as deliveries are folded.");
    HL.content(range);
    return;
  }
  const firsts = metrics.map((m) => m.first_day).sort();
  const lasts = metrics.map((m) => m.last_day).sort();
  const first = Date.parse(reply.first_day || firsts[0]);
  const last = Date.parse(reply.last_day || lasts[lasts.length - 1]);
  const columns = Math.round((last - first) / day) + 1;
  const step = 12; // a cell is 10 px wide and a 2 px gap (dashboard.css, .coverage-grid)

  // month labels, each at its month's first column: none closer to the one before than
  // the one before is wide (the range's first month, begun before it, gives way)
  const months = [];
  for (let t = first, column = 0; t <= last; t += day, column++) {
    const d = iso(t);
    if (t !== first && !d.endsWith("-01")) continue;
    const date = new Date(t);
    const january = date.getUTCMonth() === 0;
    const text = date.toLocaleString("en", { month: "short", timeZone: "UTC" }) +
      (t === first || january ? " " + date.getUTCFullYear() : "");
    const wide = text.length * 7 + 6; // 11 px text: under 7 px a character, and a margin
    const before = months[months.length - 1];
    if (before && column * step < before.at + before.wide) {
      if (before.first) months.pop(); else continue;
    }
    months.push({ at: column * step, wide, text, first: t === first });
  }
  const labels = el("div", { class: "months" }, months.map((m) => {
    const label = el("span", { text: m.text });
    label.style.left = m.at + "px";
    return label;
  }));
  labels.style.width = columns * step + "px";

  const rows = metrics.map((m) => {
    const gapDays = new Set();
    for (const g of m.gaps) {
      for (let t = Date.parse(g.first); t <= Date.parse(g.last); t += day) gapDays.add(iso(t));
    }
    const peak = Math.max(...Object.values(m.days));
    const cells = [];
    for (let t = first; t <= last; t += day) {
      const d = iso(t);
      const n = m.days[d] || 0;
      const late = m.late[d] || 0;
      const level = n ? 1 + Math.min(3, Math.floor((4 * n) / (peak + 1))) : 0;
      const classes = [n ? "d" + level : "", gapDays.has(d) ? "gap" : "", late ? "late" : ""];
      let title = `${m.display_name || m.metric}, ${d}: ` + (n ? plural(n, "point") : "no data");
      if (gapDays.has(d)) title += " (gap)";
      if (late) title += ", " + late + " late";
      cells.push(el("a", {
        class: classes.filter(Boolean).join(" ") || "none",
        href: HL.link("/metrics/" + encodeURIComponent(m.metric), { day: d }),
        title, "data-day": d, "data-points": String(n), "aria-label": title,
      }));
    }
    return el("section", { class: "metric-block", "data-metric": m.metric },
      el("a", { class: "metric-name", href: HL.link("/metrics/" + encodeURIComponent(m.metric)),
        title: m.metric, text: m.display_name || m.metric }),
      el("div", { class: "calendar" }, cells));
  });
  const grid = el("div", { class: "calendar-scroll", id: "calendar" },
    el("div", { class: "coverage-grid" }, el("div", { class: "months-row" }, el("span", { class: "metric-name" }), labels), rows));

  const legend = el("div", { class: "legend" },
    el("span", {}, el("i", {}), "no data"), el("span", {}, el("i", { class: "d3" }), "points (darker: more)"),
    el("span", {}, el("i", { class: "gap" }), "gap (a day without data)"),
    el("span", {}, el("i", { class: "late" }), "late samples"));

  // per metric: a row, the lists on demand
  const summary = metrics.map((m) => {
    const gapDays = m.gaps.reduce((sum, g) => sum + g.days, 0);
    const gaps = !m.gaps.length
      ? el("span", { class: "advice", text: m.daily ? "none" : "none (not daily)" })
      : el("details", { class: "gaps", "data-metric": m.metric },
        el("summary", { text: `${plural(m.gaps.length, "gap")}, ${plural(gapDays, "day")}` }),
        el("ul", { class: "gaps" }, m.gaps.slice().reverse().map((g) =>
          el("li", { "data-gap": g.first + "/" + g.last },
            el("strong", { text: g.first === g.last ? g.first : `${g.first} – ${g.last}` }),
            ` (${plural(g.days, "day")}). `,
            el("span", { class: "advice", text: g.resend })))));
    const lateDays = Object.entries(m.late).sort().reverse();
    const late = !lateDays.length
      ? el("span", { class: "advice", text: "none" })
      : el("details", { class: "late", "data-metric": m.metric },
        el("summary", { text: `${plural(m.late_points, "sample")}, ${plural(lateDays.length, "day")}` }),
        HL.table(["day", "late samples"], lateDays.map(([d, n]) => [d, HL.number(n, 0)]), [1]));
    return [
      el("span", {}, el("a", { href: HL.link("/metrics/" + encodeURIComponent(m.metric)), text: m.display_name || m.metric }),
        el("br"), el("code", { class: "stored", text: m.metric }),
        el("span", { class: "advice", text: ` ${m.first_day} – ${m.last_day}` })),
      HL.number(m.days_with_data, 0),
      gaps,
      late,
    ];
  });
  // HL.table's box scrolls; the table is inside it
  const table = HL.table(["metric, first – last day", "days with data", "gaps", "late samples"], summary, [1]);
  table.classList.add("coverage-table");
  for (const [i, row] of Array.from(table.querySelector("tbody").rows).entries()) row.dataset.metric = metrics[i].metric;

  HL.content(range, legend, grid,
    el("p", { class: "advice", text: "A gap is a day without data inside a stretch of daily data; late samples arrived through HAE long after their time. Opening a list says what to do." }),
    el("div", { class: "scroll" }, table));
  grid.scrollLeft = grid.scrollWidth; // the most recent days first
});
