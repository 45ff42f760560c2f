"use strict";
// Summary, the home page: today and the last 7 days of each metric, a 30-day sparkline
// and the trend of the last 90 days against the year (GET /api/summary, reads.summary);
// a status line links to the Status page.
HL.start(async () => {
  const { el } = HL;
  const asked = new URLSearchParams(window.location.search).get("until");
  const s = await HL.api("summary", { until: asked });
  const svg = "http://www.w3.org/2000/svg";
  const shape = (tag, attrs) => {
    const node = document.createElementNS(svg, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
    return node;
  };

  // the value in a person's terms: hours and minutes of sleep or workouts, else a number
  function shown(card, value) {
    if (value === null || value === undefined) return "–";
    if (card.metric === "sleep_analysis") {
      const minutes = Math.round(value * 60);
      return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, "0")} min`;
    }
    if (card.metric === "workouts") return `${HL.number(value, 0)} min`;
    const digits = Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? 1 : 2;
    return `${HL.number(value, digits)} ${card.display_unit || ""}`.trim();
  }

  // thirty days as bars (a total) or a line (an average), drawn here: no chart library
  function sparkline(card) {
    const width = 150, height = 36;
    const values = card.spark.map((p) => p.value);
    const have = values.filter((v) => v !== null);
    // stretched to the card's width: the days' bars widen, the line's stroke stays thin
    const box = shape("svg", { viewBox: `0 0 ${width} ${height}`, class: "spark", preserveAspectRatio: "none",
                               role: "img", "aria-label": `the last ${values.length} days` });
    if (!have.length) return box;
    const low = card.kind === "cumulative" ? 0 : Math.min(...have);
    const high = Math.max(...have);
    const y = (v) => height - 2 - (high === low ? (height - 4) / 2 : ((v - low) / (high - low)) * (height - 4));
    const step = width / values.length;
    if (card.kind === "cumulative") {
      values.forEach((v, i) => {
        if (v === null) return;
        box.append(shape("rect", { x: (i * step + 1).toFixed(1), y: y(v).toFixed(1),
          width: Math.max(1, step - 2).toFixed(1), height: (height - 2 - y(v)).toFixed(1) }));
      });
    } else {
      // a day without data breaks the line
      let path = "", pen = false;
      values.forEach((v, i) => {
        if (v === null) { pen = false; return; }
        path += `${pen ? "L" : "M"}${(i * step + step / 2).toFixed(1)} ${y(v).toFixed(1)} `;
        pen = true;
      });
      box.append(shape("path", { d: path.trim() }));
      values.forEach((v, i) => {
        if (v !== null && (values[i - 1] ?? null) === null && (values[i + 1] ?? null) === null) {
          box.append(shape("circle", { cx: (i * step + step / 2).toFixed(1), cy: y(v).toFixed(1), r: 1.8 }));
        }
      });
    }
    return box;
  }

  function trendLine(card) {
    const t = card.trend;
    if (!t) return el("p", { class: "trend none", text: "Not enough days yet for a trend." });
    const arrow = { up: "↑", down: "↓", steady: "→" }[t.direction];
    const words = { up: "higher", down: "lower", steady: "steady" }[t.direction];
    return el("p", { class: "trend " + t.direction, "data-direction": t.direction,
                     title: `the average day of the last 90 days (${t.recent_days} with data) against ` +
                            `the last 365 (${t.year_days}); a trend when they differ by more than ` +
                            `${shown(card, t.threshold)}` },
      el("span", { class: "arrow", text: arrow }),
      ` ${words}: ${shown(card, t.recent)} a day over 90 days, ${shown(card, t.year)} over the year`);
  }

  function card(c) {
    const href = c.metric === "sleep_analysis" ? HL.link("/sleep")
      : c.metric === "workouts" ? HL.link("/workouts")
      : HL.link("/metrics/" + encodeURIComponent(c.metric), { range: "M" });
    const today = c.today !== null ? ["Today", shown(c, c.today)]
      : c.last_day ? [`Last, ${HL.when(c.last_day)}`, shown(c, c.last_value)]
      : ["Today", "–"];
    const night = c.metric === "sleep_analysis";
    if (night && c.today !== null) today[0] = "Last night";
    const week = c.kind === "cumulative"
      ? `${shown(c, c.week)} in the last 7 days` + (c.week_per_day !== null ? ` · ${shown(c, c.week_per_day)} a day` : "")
      : `${shown(c, c.week)} average, last 7 ${night ? "nights" : "days"}`;
    return el("a", { class: "card glance", href, "data-metric": c.metric },
      el("div", { class: "label", text: c.display_name }),
      el("div", { class: "today" },
        el("span", { class: "when", text: today[0] }),
        el("span", { class: "value", "data-today": c.today === null ? "" : String(c.today), text: today[1] })),
      el("div", { class: "week", "data-week": c.week === null ? "" : String(c.week),
                  text: c.week_days ? week : "Nothing in the last 7 days" }),
      sparkline(c),
      trendLine(c));
  }

  const st = s.status;
  const line = el("p", { class: "status-line", id: "status-line" },
    `Last delivery ${HL.when(st.last_delivery)} · backlog ${HL.number(st.backlog, 0)} · `,
    el("span", { class: st.failed ? "bad" : null, text: `${HL.number(st.failed, 0)} failed` }),
    st.watch ? ` · ${st.watch} to look at` : "",
    " · ", el("a", { href: HL.link("/status"), text: "Status" }));
  document.getElementById("title").textContent = asked ? `Summary, ${HL.when(s.today)}` : "Summary";
  HL.content(
    line,
    s.cards.length
      ? el("div", { class: "glances", id: "cards" }, s.cards.map(card))
      : el("p", { text: "No data in the last year yet: once Health Auto Export delivers, it shows here." }),
    el("p", { class: "advice", text: "A trend compares the last 90 days with the last 365; an arrow shows only when " +
      "the difference is beyond what the day-to-day spread would give (docs/dashboard.md)." }));
});
