// healthlog dashboard: what every page shares. No framework, no request to another host.
"use strict";

const HL = (() => {
  const here = new URLSearchParams(window.location.search);
  const account = here.get("account");

  function withAccount(params) {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(params || {})) {
      if (value !== null && value !== undefined && value !== "") query.set(key, value);
    }
    if (account) query.set("account", account);
    const text = query.toString();
    return text ? "?" + text : "";
  }

  // a link to a page of the dashboard that keeps the account chosen in the selector
  function link(path, params) {
    return path + withAccount(params);
  }

  async function api(path, params) {
    const reply = await fetch("/api/" + path + withAccount(params), {
      credentials: "same-origin",
      headers: { Accept: "application/json" },
    });
    if (reply.status === 401) {
      window.location.assign("/sign-in");
      throw new Error("sign in first");
    }
    const data = await reply.json().catch(() => ({ error: "the reply was not JSON" }));
    if (!reply.ok) throw new Error(data.error || "request failed (" + reply.status + ")");
    return data;
  }

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("data-")) node.setAttribute(key, value);
      else if (key === "hidden") node.hidden = true;
      else node.setAttribute(key, value);
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  // a table in a scroller of its own: wider than a phone, it scrolls, the page does not
  function table(headers, rows, numeric) {
    const nums = new Set(numeric || []);
    return el("div", { class: "scroll" }, el(
      "table",
      {},
      el("thead", {}, el("tr", {}, headers.map((h, i) => el("th", { class: nums.has(i) ? "num" : null }, h)))),
      el("tbody", {}, rows.map((row) => el("tr", {}, row.map((cell, i) => el("td", { class: nums.has(i) ? "num" : null }, cell))))),
    ));
  }

  function content(...nodes) {
    const box = document.getElementById("content");
    box.replaceChildren(...nodes.flat());
    return box;
  }

  function say(text, isError) {
    const box = document.getElementById("message");
    box.textContent = text;
    box.className = "message" + (isError ? " error" : "");
    box.hidden = !text;
  }

  function fail(error) {
    content();
    say(error.message || String(error), true);
  }

  function data(name) {
    return document.getElementById("main").dataset[name];
  }

  function number(value, digits) {
    if (value === null || value === undefined) return "–";
    const d = digits === undefined ? 2 : digits;
    return Number(value).toLocaleString(undefined, { maximumFractionDigits: d });
  }

  function bytes(size) {
    if (size < 1024) return size + " B";
    if (size < 1024 * 1024) return (size / 1024).toFixed(1) + " KiB";
    return (size / 1024 / 1024).toFixed(1) + " MiB";
  }

  function age(seconds) {
    if (seconds === null || seconds === undefined) return "–";
    if (seconds < 90) return Math.round(seconds) + " s";
    if (seconds < 5400) return Math.round(seconds / 60) + " min";
    if (seconds < 172800) return (seconds / 3600).toFixed(1) + " h";
    return (seconds / 86400).toFixed(1) + " days";
  }

  // seconds as a clock: 5:07, 1:02:09 (a duration, a pace per km or mi)
  function clock(seconds) {
    if (seconds === null || seconds === undefined) return "–";
    const whole = Math.round(Number(seconds));
    const h = Math.floor(whole / 3600), m = Math.floor((whole % 3600) / 60), s = whole % 60;
    const two = (n) => String(n).padStart(2, "0");
    return h ? `${h}:${two(m)}:${two(s)}` : `${m}:${two(s)}`;
  }

  function when(text) {
    if (!text) return "–";
    return text.replace("T", " ").replace(/\.\d+/, "");
  }

  // the view a page shows, written into its URL (the account kept), so that a link or a
  // reload reopens it; nothing is fetched
  function remember(params) {
    window.history.replaceState(null, "", window.location.pathname + withAccount(params));
  }

  // the ranges' names, and the days a range shows ("3 Mar – 2 Apr 2026")
  const spanTitles = Object.freeze({ D: "a day", W: "a week", M: "a month",
                                     "6M": "six months", Y: "a year", All: "all the data" });
  function spanText(start, end) {
    if (!start || !end) return "";
    const day = (text) => new Date(text.slice(0, 10) + "T00:00:00Z");
    const first = day(start);
    const last = new Date(day(end).getTime() - (end.length > 10 && end.slice(11, 16) !== "00:00" ? 0 : 86400000));
    const f = (d, year) => d.toLocaleDateString(undefined, Object.assign(
      { day: "numeric", month: "short", timeZone: "UTC" }, year ? { year: "numeric" } : {}));
    if (first.getTime() >= last.getTime()) return f(first, true);
    return `${f(first, first.getUTCFullYear() !== last.getUTCFullYear())} – ${f(last, true)}`;
  }

  // the ranges as the Health app offers them (D W M 6M Y All) and the arrows to the range
  // before and after: pick(range) when one is chosen, move(until) for an arrow; show()
  // marks the range a reply's window says and the days it shows (reads.windows)
  function rangeControl(pick, move) {
    const spans = ["D", "W", "M", "6M", "Y", "All"].map((r) =>
      el("button", { type: "button", class: "span", "data-range": r, text: r,
                     "aria-pressed": "false", title: spanTitles[r] }));
    const earlier = el("button", { type: "button", id: "earlier", text: "‹", title: "earlier" });
    const later = el("button", { type: "button", id: "later", text: "›", title: "later" });
    const shown = el("span", { id: "shown", class: "advice" });
    let current = null;
    for (const b of spans) b.addEventListener("click", () => pick(b.dataset.range));
    for (const [button, key] of [[earlier, "earlier"], [later, "later"]]) {
      button.addEventListener("click", () => { if (current && current[key]) move(current.range, current[key]); });
    }
    function show(w, start, end) {
      current = w;
      for (const b of spans) b.setAttribute("aria-pressed", String(Boolean(w) && b.dataset.range === w.range));
      earlier.disabled = !(w && w.earlier);
      later.disabled = !(w && w.later);
      shown.textContent = w && w.range === "All" ? "all the data" : spanText(start, end);
    }
    const node = el("div", { class: "controls ranges", role: "group", "aria-label": "range" },
      earlier, el("span", { class: "segmented" }, spans), later, shown);
    return { node, show };
  }

  function status(value) {
    return el("span", { class: "status " + value, text: value });
  }

  // a string that came from a body or an export (a unit, a source, a name) as plotly must
  // be given it, to draw it as text. plotly reads its titles, hover labels, legends and
  // annotations as a little HTML (an <a href> there is a real link off the machine, a <b>
  // is bold) and fills a %{...} in a hovertemplate with a value; its entities it shows as
  // written. Every data string a chart draws goes through this, in the hovertemplate
  // itself as in customdata, axis titles and trace names.
  const plotEntities = Object.freeze({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "%": "&#37;" });
  function plotText(value) {
    if (value === null || value === undefined) return "";
    return String(value).replace(/[&<>%]/g, (c) => plotEntities[c]);
  }

  // every chart's config (a test checks each plot has it): no plotly logo (a link to
  // plotly.com), no "Share chart..." button (it posts the chart's data to plotly's cloud),
  // and no cloud address for anything to send to; the PNG download stays on this machine
  const plotConfig = Object.freeze({
    displaylogo: false,
    showSendToCloud: false,
    plotlyServerURL: "",
    responsive: true,
  });
  // the charts' colours are the page's (dashboard.css: light, or dark with the system)
  const css = (name, fallback) =>
    getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
  const narrow = window.matchMedia("(max-width: 600px)").matches;  // a phone: less margin
  const plotLayout = {
    margin: narrow ? { l: 44, r: 8, t: 16, b: 40 } : { l: 60, r: 20, t: 20, b: 50 },
    paper_bgcolor: css("--card", "#fff"),
    plot_bgcolor: css("--card", "#fff"),
    font: { family: "system-ui, sans-serif", size: 12, color: css("--fg", "#1d2330") },
    hovermode: "closest",
  };
  // the axes' lines as defaults (a template): a page's own xaxis and yaxis keep them
  const grid = { gridcolor: css("--line", "#dde1e8"), zerolinecolor: css("--line", "#dde1e8"),
                 linecolor: css("--line", "#dde1e8") };
  plotLayout.template = { layout: { xaxis: grid, yaxis: grid } };

  // the navigation's current page, and the account in view (a selector when several)
  async function frame() {
    const page = document.body.dataset.page;
    // (the links carry the account in view already: the server writes them so)
    for (const a of document.querySelectorAll("header nav a")) {
      if ((a.dataset.nav || "").split(" ").includes(page)) a.classList.add("active");
    }
    const box = document.getElementById("account");
    if (!box) return null;
    try {
      const session = await api("session");
      if (!session.sign_in_required && session.accounts.length > 1) {
        const select = el(
          "select",
          { id: "account-select", "aria-label": "account" },
          el("option", { value: "", text: "choose an account" }),
          session.accounts.map((name) => el("option", { value: name, text: name })),
        );
        select.value = session.account ? session.account.name : "";
        select.addEventListener("change", () => {
          const params = new URLSearchParams(window.location.search);
          if (select.value) params.set("account", select.value);
          else params.delete("account");
          window.location.search = params.toString();
        });
        box.replaceChildren("account ", select);
      } else if (session.account) {
        box.textContent = "account " + session.account.name;
      }
      return session;
    } catch (error) {
      return null;
    }
  }

  function start(draw) {
    document.addEventListener("DOMContentLoaded", async () => {
      const session = await frame();
      if (session && !session.account) {
        fail(new Error(session.choose || "no account to show"));
        document.body.dataset.ready = "error";
        return;
      }
      // installed without the dashboard extra: say what to install, not "Plotly is not defined"
      const chartsMissing = data("chartsMissing");
      if (chartsMissing && typeof Plotly === "undefined") {
        fail(new Error(chartsMissing));
        document.body.dataset.ready = "error";
        return;
      }
      try {
        await draw();
        document.body.dataset.ready = "yes"; // drawn: what the browser tests wait for
      } catch (error) {
        fail(error);
        document.body.dataset.ready = "error";
      }
    });
  }

  return { api, el, table, content, say, fail, data, number, bytes, age, clock, when, status,
           link, start, plotConfig, plotLayout, plotText, remember, spanTitles, spanText, rangeControl };
})();
