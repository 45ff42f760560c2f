"use strict";
// Workouts: the totals per week and the list, each with its duration, distance and active
// energy in the account's units (GET /api/workouts: the figures are the API's).
HL.start(async () => {
  const { el } = HL;
  const { workouts, weeks } = await HL.api("workouts");
  if (!workouts.length) {
    HL.say("No workouts yet.");
    HL.content();
    return;
  }
  const amount = (x, digits) => (x ? `${HL.number(x.value, digits)} ${x.unit}` : "–");
  const length = weeks.length ? weeks[0].distance_unit : "km";
  const perWeek = el("div", { class: "scroll", id: "weeks" }, HL.table(
    ["week of", "workouts", "duration", `distance (${length})`, "active energy (kcal)"],
    weeks.slice().reverse().map((t) => [t.monday, String(t.workouts), HL.clock(t.duration_s),
      t.distance === null ? "–" : HL.number(t.distance, 2),
      t.active_energy === null ? "–" : HL.number(t.active_energy, 0)]), [1, 2, 3, 4]));
  const list = el("div", { class: "scroll", id: "list" }, HL.table(
    ["start", "workout", "duration", "distance", "active energy", "location", "source"],
    workouts.slice().reverse().map((w) => [HL.when(w.start),
      el("a", { href: HL.link("/workouts/" + encodeURIComponent(w.identity)), text: w.name || w.identity }),
      w.figures.duration ? HL.clock(w.figures.duration.value) : "–",
      amount(w.figures.distance, 2), amount(w.figures.active_energy, 0),
      w.location || "–", w.source || "–"]), [2, 3, 4]));
  HL.content(el("h2", { text: "Per week" }), perWeek, el("h2", { text: "Workouts" }), list);
});
