// The hub dashboard: polls GET /v1/dashboard with the admin token and redraws the tables.
// Every value from the hub goes into the page through textContent, never as markup.
"use strict";

(function () {
  const TOKEN_KEY = "blackwidow.adminToken";
  const REFRESH_MS = 5000;
  const numbers = new Intl.NumberFormat("en-US");

  let timer = null;
  let request = 0;          // answers to an older request are dropped
  let stateFilter = null;
  let lastUpdate = null;

  const byId = (id) => document.getElementById(id);

  function el(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  }

  function withTitle(node, title) {
    if (title) node.title = String(title);
    return node;
  }

  function cell(content, className) {
    const td = el("td", null, className);
    if (content instanceof Node) td.append(content);
    else td.textContent = content === null || content === undefined ? "" : String(content);
    return td;
  }

  function row(cells) {
    const tr = el("tr");
    tr.append(...cells);
    return tr;
  }

  function fillTable(id, rows, emptyText) {
    const table = byId(id);
    const body = table.tBodies[0];
    if (rows.length) {
      body.replaceChildren(...rows);
    } else {
      const td = cell(emptyText, "empty");
      td.colSpan = table.tHead.rows[0].cells.length;
      body.replaceChildren(row([td]));
    }
  }

  // Class names only from a known alphabet: states come from the hub, but never trust them as markup.
  function chip(text, kind) {
    const safe = String(kind || text).replace(/[^a-z_]/g, "");
    return el("span", text, "chip chip-" + safe);
  }

  const label = (state) => String(state).replaceAll("_", " ");

  function count(value) {
    return value === null || value === undefined ? "" : numbers.format(value);
  }

  function ago(timestamp, now) {
    if (!timestamp) return withTitle(el("span", "never", "muted"), "");
    const seconds = Math.max(0, Math.round((Date.parse(now) - Date.parse(timestamp)) / 1000));
    let text;
    if (seconds < 60) text = seconds + " s ago";
    else if (seconds < 3600) text = Math.floor(seconds / 60) + " min ago";
    else if (seconds < 86400) text = Math.floor(seconds / 3600) + " h ago";
    else text = Math.floor(seconds / 86400) + " d ago";
    return withTitle(el("time", text), timestamp);
  }

  function shortId(id) {
    return id ? withTitle(el("code", String(id).slice(0, 8)), id) : el("span", "—", "muted");
  }

  function wikiHost(url) {
    try {
      return new URL(url).host;
    } catch (e) {
      return url;
    }
  }

  function renderTotals(data) {
    const live = data.nodes.filter((n) => n.state === "live").length;
    const dead = data.nodes.length - live;
    byId("total-nodes").textContent = numbers.format(live) + (dead ? " (" + dead + " down)" : "");
    byId("total-subscriptions").textContent = count(data.subscriptions.total);
    byId("total-revisions").textContent = count(data.subscriptions.revisions);
    byId("total-tenants").textContent = count(data.tenants.total);
  }

  function renderStates(data) {
    const items = Object.entries(data.subscriptions.by_state).map(([state, n]) => {
      const button = el("button", null, "state" + (n ? "" : " zero"));
      button.type = "button";
      button.dataset.state = state;
      button.setAttribute("aria-pressed", String(stateFilter === state));
      button.append(el("span", numbers.format(n), "n"), chip(label(state), state));
      button.addEventListener("click", () => {
        stateFilter = stateFilter === state ? null : state;
        refresh();
      });
      const li = el("li");
      li.append(button);
      return li;
    });
    byId("state-counts").replaceChildren(...items);
  }

  function renderNodes(data) {
    fillTable("nodes", data.nodes.map((n) => row([
      cell(shortId(n.id)),
      cell(n.url, "url"),
      cell(chip(n.state)),
      cell(ago(n.last_seen, data.generated_at)),
      cell(count(n.consecutive_failures), "num"),
      cell(count(n.subscriptions), "num"),
      cell(clockText(n.clock)),
    ])), "No spawn has registered yet.");
  }

  // The node's clock against the hub's (docs/upstream.md, "Clocks"): beyond the bound, it gets no upstream slot.
  function clockText(clock) {
    if (!clock) return "not measured";
    const ms = (s) => Math.round(s * 1000) + " ms";
    const text = (clock.offset_s >= 0 ? "+" : "") + ms(clock.offset_s) + " \u00b1 " + ms(clock.error_s);
    return clock.trusted ? text : text + " (over " + ms(clock.bound_s) + ": no upstream slot)";
  }

  function renderSubscriptions(data) {
    const subs = data.subscriptions;
    byId("recent-filter").textContent = subs.state ? "in state " + label(subs.state) : "";
    fillTable("subscriptions", subs.recent.map((s) => row([
      cell(withTitle(el("span", s.title), s.id), "title"),
      cell(withTitle(el("span", wikiHost(s.wiki)), s.wiki)),
      cell(s.tenant),
      cell(chip(label(s.state), s.state)),
      cell(count(s.revisions), "num"),
      cell(shortId(s.node)),
      cell(s.last_error ? withTitle(el("span", s.last_error), s.last_error) : el("span", "—", "muted"), "error"),
      cell(ago(s.updated_at, data.generated_at)),
      cell(s.watermark ? ago(s.watermark, data.generated_at) : el("span", "—", "muted")),
    ])), subs.state ? "No subscription is " + label(subs.state) + "." : "No subscriptions yet.");
  }

  function usage(t) {
    if (t.quota === null) return el("span", "unlimited", "muted");
    const meter = el("meter");
    meter.min = 0;
    meter.max = Math.max(t.quota, 1);
    meter.value = Math.min(t.used, meter.max);
    meter.low = meter.max * 0.75;      // green below 75 %, amber up to 90 %, red above
    meter.high = meter.max * 0.9;
    meter.optimum = 0;
    const pct = t.quota ? Math.round((100 * t.used) / t.quota) : 100;
    const span = el("span", null, "usage");
    span.append(meter, el("span", pct + " %", "pct"));
    return span;
  }

  function renderTenants(data) {
    const tenants = data.tenants;
    byId("tenants-shown").textContent =
      tenants.items.length < tenants.total ? "(top " + tenants.items.length + " of " + tenants.total + ")" : "";
    fillTable("tenants", tenants.items.map((t) => row([
      cell(withTitle(el("span", t.name), t.name), "name"),
      cell(count(t.used), "num"),
      cell(t.quota === null ? "—" : count(t.quota), "num"),
      cell(usage(t)),
      cell(count(t.subscriptions), "num"),
    ])), "No tenants yet.");
  }

  function renderReloads(data) {
    fillTable("reloads", data.reloads.map((r) => row([
      cell(ago(r.at, data.generated_at)),
      cell(chip(r.kind)),
      cell(r.reason),
      cell(count(r.sends), "num"),
      cell(count(r.drops), "num"),
    ])), "No reloads yet.");
  }

  function until(timestamp, now) {
    const seconds = Math.max(0, Math.round((Date.parse(timestamp) - Date.parse(now)) / 1000));
    return withTitle(el("time", "for " + seconds + " s"), timestamp);
  }

  function holders(i, now) {
    if (!i.windows.length) return el("span", "—", "muted");
    const list = el("span", null, "windows");
    for (const w of i.windows) {
      const item = el("span", null, "window");
      item.append(shortId(w.node), el("span", " slot " + w.slot + " until "), until(w.end, now));
      list.append(item);
    }
    return list;
  }

  function renderIdentities(data) {
    fillTable("identities", data.identities.map((i) => row([
      cell(withTitle(el("span", i.id), i.configured ? "configured" : "host defaults"), "name"),
      cell(i.credential === null ? el("span", "anonymous", "muted") : i.credential),
      cell(count(i.in_flight), "num"),
      cell(String(i.per_s), "num"),
      cell(i.per_min === null ? "—" : count(i.per_min), "num"),
      cell(count(i.in_use), "num"),
      cell(holders(i, data.generated_at)),
      cell(i.paused_until ? withTitle(until(i.paused_until, data.generated_at), i.pause_reason)
        : el("span", "—", "muted")),
      cell(i.auth_error ? withTitle(el("span", i.auth_error), i.auth_error_node) : el("span", "—", "muted"),
        "error"),
    ])), "No wiki subscribed yet.");
  }

  function renderFeeds(data) {
    fillTable("feeds", data.feeds.map((f) => row([
      cell(withTitle(el("span", wikiHost(f.wiki)), f.wiki), "name"),
      cell(f.reader ? shortId(f.reader) : el("span", "—", "muted")),
      cell(f.watermark ? ago(f.watermark, data.generated_at) : el("span", "—", "muted")),
      cell(f.lag_s === null ? "—" : String(Math.round(f.lag_s)), "num"),
      cell(count(f.changes), "num"),
      cell(f.gaps ? withTitle(el("span", count(f.gaps)), f.last_gap) : el("span", "0"), "num"),
      cell(count(f.subscriptions), "num"),
      cell(f.error ? withTitle(el("span", f.error), f.error) : el("span", "—", "muted"), "error"),
    ])), "No wiki's feed is followed yet.");
  }

  function duration(seconds) {
    if (seconds === null || seconds === undefined) return el("span", "—", "muted");
    const s = Math.round(seconds);
    if (s < 60) return el("span", s + " s");
    if (s < 3600) return el("span", Math.round(s / 60) + " min");
    return el("span", (s / 3600).toFixed(1) + " h");
  }

  // what part of the wiki a set holds: a category with its pages, some namespaces, or all of it
  function setScope(s) {
    if (s.category) return " · " + s.category + " (" + count(s.members.pages) + " pages)";
    if (s.namespaces) return " · namespaces " + s.namespaces.join(", ");
    return "";
  }

  // the set's proof that its stored history equals the wiki's: shards proven at the last census, or the one running
  // (its reader listing the wiki, then its shards proven on the nodes)
  function censusText(c) {
    if (!c) return el("span", "—", "muted");
    if (c.running && !c.running.listed_whole) return el("span", "listing: " + count(c.running.listed) + " ids");
    if (c.running) return el("span", "proving " + count(c.running.shards_done) + " / " + count(c.running.shards));
    return chip(count(c.last.proven_shards) + " / " + count(c.last.shards) + " proven", c.state);
  }

  function renderSets(data) {
    fillTable("sets", data.sets.map((s) => {
      const p = s.progress;
      const failed = s.files.find((f) => f.error);
      return row([
        cell(shortId(s.id)),
        cell(withTitle(el("span", wikiHost(s.wiki) + setScope(s)), s.wiki), "name"),
        cell(chip(label(s.state), s.state)),
        cell(count(p.files_done) + " / " + count(p.files), "num"),
        cell(count(p.revisions_written), "num"),
        cell(count(Math.round(p.revisions_per_s)), "num"),
        cell(duration(p.eta_s), "num"),
        cell(censusText(s.census)),
        cell(failed ? withTitle(el("span", failed.error), failed.url) : el("span", "—", "muted"), "error"),
      ]);
    }), "No wiki is being bootstrapped from dumps.");
  }

  function setStatus(text, kind) {
    const status = byId("status");
    status.textContent = text;
    status.className = "status" + (kind ? " " + kind : "");
  }

  function clearData() {
    for (const id of ["nodes", "subscriptions", "identities", "feeds", "sets", "tenants", "reloads"]) {
      byId(id).tBodies[0].replaceChildren();
    }
    for (const id of ["state-counts", "total-nodes", "total-subscriptions", "total-revisions", "total-tenants",
      "recent-filter", "tenants-shown"]) byId(id).replaceChildren();
    byId("data").hidden = true;
    lastUpdate = null;
  }

  function askForToken(message) {
    clearTimeout(timer);
    clearData();
    byId("auth-message").textContent = message;
    byId("auth").hidden = false;
    byId("forget").hidden = true;
    setStatus("Not signed in", "warn");
    byId("token-input").focus();
  }

  function show(data) {
    byId("auth").hidden = true;
    byId("forget").hidden = false;
    renderTotals(data);
    renderStates(data);
    renderNodes(data);
    renderSubscriptions(data);
    renderIdentities(data);
    renderFeeds(data);
    renderSets(data);
    renderTenants(data);
    renderReloads(data);
    byId("data").hidden = false;
    lastUpdate = new Date();
    setStatus("Updated " + lastUpdate.toLocaleTimeString("en-GB") + " · refreshes every " + REFRESH_MS / 1000 + " s");
  }

  async function refresh() {
    clearTimeout(timer);
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (!token) {
      askForToken("Enter the hub's admin token to see the dashboard.");
      return;
    }
    const mine = ++request;
    const url = "/v1/dashboard" + (stateFilter ? "?state=" + encodeURIComponent(stateFilter) : "");
    let resp, data;
    try {
      resp = await fetch(url, { headers: { Authorization: "Bearer " + token }, cache: "no-store" });
      if (resp.ok) data = await resp.json();
    } catch (err) {
      resp = null;
    }
    if (mine !== request) return;
    if (resp && resp.status === 401) {
      sessionStorage.removeItem(TOKEN_KEY);
      askForToken("The hub refused this admin token. Enter the hub's BW_ADMIN_TOKEN.");
      return;
    }
    timer = setTimeout(refresh, REFRESH_MS);
    if (data) {
      show(data);
    } else {
      const why = resp ? "the hub answered " + resp.status : "no answer";
      const since = lastUpdate ? " — showing data from " + lastUpdate.toLocaleTimeString("en-GB") : "";
      setStatus("Cannot reach the hub (" + why + ")" + since, "error");
    }
  }

  // A token in the fragment (#token=…&state=…) never reaches the server; drop it from the address bar
  // and history.
  function takeTokenFromFragment() {
    const params = new URLSearchParams(location.hash.slice(1));
    if (params.get("token")) sessionStorage.setItem(TOKEN_KEY, params.get("token"));
    if (params.has("state")) stateFilter = params.get("state") || null;
    if (location.hash) history.replaceState(null, "", location.pathname + location.search);
  }

  function start() {
    takeTokenFromFragment();
    byId("token-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const input = byId("token-input");
      const token = input.value.trim();
      input.value = "";
      if (token) sessionStorage.setItem(TOKEN_KEY, token);
      refresh();
    });
    byId("forget").addEventListener("click", () => {
      sessionStorage.removeItem(TOKEN_KEY);
      refresh();
    });
    window.addEventListener("hashchange", () => {
      takeTokenFromFragment();
      refresh();
    });
    document.addEventListener("visibilitychange", () => {
      if (!document.hidden) refresh();
    });
    refresh();
  }

  start();
})();
