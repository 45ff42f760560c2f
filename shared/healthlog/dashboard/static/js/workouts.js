"use strict";
// Workouts: the list (GET /api/workouts).
HL.start(async () => {
  const { el } = HL;
  const { workouts } = await HL.api("workouts");
  if (!workouts.length) {
    HL.say("No workouts yet.");
    HL.content();
    return;
  }
  const duration = (d) => (d && typeof d === "object" ? HL.number(d.qty) + " " + (d.units || "") :
    d === null || d === undefined ? "–" : HL.number(Number(d) / 60, 0) + " min");
  HL.content(HL.table(["start", "workout", "duration", "location", "source"],
    workouts.slice().reverse().map((w) => [HL.when(w.start),
      el("a", { href: HL.link("/workouts/" + encodeURIComponent(w.identity)), text: w.name || w.identity }),
      duration(w.duration), w.location || "–", w.source || "–"])));
});
