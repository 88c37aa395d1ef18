"use strict";
(() => {
  const CHUNK = 500;            // timeline rows rendered at a time
  const STEP_CHUNK = 200;       // diff step rows rendered at a time
  const CELL_LIMIT = 50;        // events per side of a diff step before "show all"
  const PRETTY_LIMIT = 200000;  // longer payloads are shown without highlighting
  const STATUS_TEXT = {
    identical: "identical", diverged: "diverged",
    only_in_a: "only in golden", only_in_b: "only in this run",
  };
  const TOKEN_KEY = "rollout-view-token";  // the served page's token, in sessionStorage
  const LANE_COLORS = 8;        // lane colours, by the lane's number (never from the data)
  const NO_AGENT = "(no agent)";
  const ALWAYS = new Set(["run.started", "run.completed", "run.failed"]);
  const view = document.getElementById("view");
  const haystacks = new WeakMap();
  const castCache = new WeakMap();
  const linkCache = new WeakMap();
  const rendered = new WeakMap();  // run -> Map(event index -> Set(rows in the page))
  let entries = [];
  let buttons = [];
  let observer = null;
  let wantedAgent = new URLSearchParams(location.search).get("agent");
  let servedAgent = null;       // the data holds this agent's events only (?agent=)
  let revealers = new Map();    // run -> (event index) => whether it is now rendered
  let target = null;            // the row last jumped to

  // -- small helpers: every string from the data goes through textContent ------------

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function button(className, text, onClick) {
    const node = el("button", className, text);
    node.type = "button";
    node.addEventListener("click", onClick);
    return node;
  }

  function failing(entry) {
    return entry.status === "failed" || entry.status === "error" || Boolean(entry.notice);
  }

  function statusText(entry) {
    if (entry.status) return String(entry.status);
    if (entry.kind === "diff") return entry.notice ? "refused" : "diff";
    if (entry.state === "complete" || entry.state === "cut short") return entry.state;
    return entry.notice ? "refused" : "run";
  }

  function statusClass(status) {
    if (status === "failed" || status === "error") return "badge status-failed";
    if (status === "passed") return "badge status-passed";
    if (status === "cut short") return "badge status-cut";
    return "badge";
  }

  function formatCost(cost) {
    if (typeof cost !== "number") return "unknown";
    const [whole, frac] = cost.toFixed(6).replace(/0+$/, "").split(".");
    return "$" + whole + "." + (frac || "").padEnd(2, "0");
  }

  function fail(message) {
    view.replaceChildren(el("p", "notice", message));
    document.body.dataset.state = "error";
  }

  // -- loading ------------------------------------------------------------------------

  function readJson(id) {
    const node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : null;
  }

  // The token comes in the address's fragment once: it is kept in sessionStorage (this tab,
  // this server) and taken out of the address, so it is neither shown nor bookmarked.
  function storeToken(token) {
    try {
      if (token) sessionStorage.setItem(TOKEN_KEY, token);
      else sessionStorage.removeItem(TOKEN_KEY);
    } catch (err) { /* storage refused: the token lives as long as the page */ }
  }

  function takeToken() {
    const given = new URLSearchParams(location.hash.slice(1)).get("token");
    if (location.hash) history.replaceState(null, "", location.pathname + location.search);
    if (given) {
      storeToken(given);
      return given;
    }
    try {
      return sessionStorage.getItem(TOKEN_KEY) || "";
    } catch (err) {
      return "";
    }
  }

  function boot() {
    let data;
    let source;
    try {
      data = readJson("rollout-data");
      source = data ? null : readJson("rollout-source");
    } catch (err) {
      fail("The rollout data in this page cannot be read: " + err.message);
      return;
    }
    if (data) {
      start(data);
      return;
    }
    if (!source || typeof source.data_url !== "string") {
      fail("This page carries no rollout data.");
      return;
    }
    const token = takeToken();
    const advice = token
      ? "The server may have stopped, or the token may be stale: open the link it printed again."
      : "The address has no #token=...: open the exact link the server printed.";
    let url = source.data_url;
    if (wantedAgent) url += "?agent=" + encodeURIComponent(wantedAgent);
    fetch(url, {
      headers: { "Authorization": "Bearer " + token },
      cache: "no-store",
      credentials: "same-origin",
      redirect: "error",
    })
      .then((response) => {
        if (!response.ok) {
          if (response.status === 403) storeToken(null);  // refused: not kept for a reload
          throw new Error("the server answered " + response.status + " " + response.statusText);
        }
        return response.json();
      })
      .then(start)
      .catch((err) => {
        fail("Could not load the rollout data from " + source.data_url + ": " +
             err.message + ". " + advice);
      });
  }

  function start(data) {
    try {
      showAll(data);
    } catch (err) {
      fail("The rollout data cannot be shown: " + err.message);
    }
  }

  function showAll(data) {
    if (typeof data.title === "string") {
      document.title = data.title;
      document.getElementById("page-title").textContent = data.title;
    }
    if (typeof data.agent === "string") servedAgent = wantedAgent = data.agent;
    const all = Array.isArray(data.entries) ? data.entries : [];
    entries = all.slice().sort((a, b) => Number(failing(b)) - Number(failing(a)));
    buildList();
    if (entries.length) {
      const firstFailingDiff = entries.findIndex((e) => e.kind === "diff" && failing(e));
      show(firstFailingDiff >= 0 ? firstFailingDiff : 0);
    } else {
      view.replaceChildren(el("p", "empty", "No rollouts to show."));
    }
    document.body.dataset.state = "ready";
  }

  // -- the list of entries ------------------------------------------------------------

  function entryPaths(entry) {
    if (entry.kind === "diff") return entry.golden.path + "\n" + entry.run.path;
    return entry.path;
  }

  function buildList() {
    const list = document.getElementById("entry-list");
    const fragment = document.createDocumentFragment();
    buttons = entries.map((entry, index) => {
      const item = button("entry" + (failing(entry) ? " failing" : ""), null, () => show(index));
      item.dataset.id = String(entry.id);
      item.dataset.kind = entry.kind === "diff" ? "diff" : "run";
      item.setAttribute("role", "listitem");
      const top = el("span", "entry-top");
      top.append(el("span", statusClass(statusText(entry)), statusText(entry)),
                 el("span", "entry-kind", item.dataset.kind));
      item.append(top, el("span", "entry-name", entry.name),
                  el("span", "entry-path", entryPaths(entry)));
      fragment.append(item);
      return item;
    });
    list.replaceChildren(fragment);
    const search = document.getElementById("entry-search");
    search.addEventListener("input", () => {
      const query = search.value.trim().toLowerCase();
      buttons.forEach((item, i) => {
        const text = (entries[i].name + "\n" + entryPaths(entries[i])).toLowerCase();
        item.hidden = query !== "" && !text.includes(query);
      });
    });
  }

  function show(index) {
    if (observer) observer.disconnect();
    observer = null;
    buttons.forEach((item, i) => {
      item.classList.toggle("active", i === index);
      if (i === index) item.setAttribute("aria-current", "true");
      else item.removeAttribute("aria-current");
    });
    const entry = entries[index];
    revealers = new Map();
    target = null;
    view.replaceChildren();
    view.scrollTop = 0;
    if (entry.kind === "diff") diffView(entry);
    else runView(entry);
  }

  function heading(entry) {
    const head = el("header", "view-head");
    head.append(el("h2", null, entry.name),
                el("span", statusClass(statusText(entry)), statusText(entry)));
    view.append(head);
    if (servedAgent !== null) {
      view.append(el("p", "served-agent", "Served for one agent (?agent=), its events and " +
        "the run's start and end only: " + servedAgent));
    }
  }

  // -- payloads -----------------------------------------------------------------------

  function writeJson(value, indent, out) {
    if (value === null || typeof value === "boolean") {
      out.append(el("span", "json-literal", String(value)));
    } else if (typeof value === "number") {
      out.append(el("span", "json-number", JSON.stringify(value)));
    } else if (typeof value === "string") {
      out.append(el("span", "json-string", JSON.stringify(value)));
    } else if (Array.isArray(value)) {
      if (!value.length) { out.append("[]"); return; }
      const inner = indent + "  ";
      out.append("[\n");
      value.forEach((item, i) => {
        out.append(inner);
        writeJson(item, inner, out);
        out.append(i < value.length - 1 ? ",\n" : "\n");
      });
      out.append(indent + "]");
    } else {
      const keys = Object.keys(value);
      if (!keys.length) { out.append("{}"); return; }
      const inner = indent + "  ";
      out.append("{\n");
      keys.forEach((key, i) => {
        out.append(inner, el("span", "json-key", JSON.stringify(key)), ": ");
        writeJson(value[key], inner, out);
        out.append(i < keys.length - 1 ? ",\n" : "\n");
      });
      out.append(indent + "}");
    }
  }

  function togglePayload(row, run, index) {
    const next = row.nextElementSibling;
    if (next && next.classList.contains("expanded")) {
      next.remove();
      row.classList.remove("open");
      row.setAttribute("aria-expanded", "false");
      return;
    }
    const ev = run.events[index];
    const box = el("div", "expanded");
    const linked = linkedTo(run, index);
    if (linked.length) box.append(linkList(run, linked));
    const pre = el("pre", "payload");
    const text = JSON.stringify(ev[4], null, 2);
    if (text.length > PRETTY_LIMIT) {
      pre.textContent = text;
    } else {
      const fragment = document.createDocumentFragment();
      writeJson(ev[4], "", fragment);
      pre.append(fragment);
    }
    box.append(pre);
    row.after(box);
    row.classList.add("open");
    row.setAttribute("aria-expanded", "true");
  }

  // -- agents: who did each event -------------------------------------------------------

  function nameOrNull(value) {
    return typeof value === "string" && value !== "" ? value : null;
  }

  function agentOf(ev) {
    const data = ev[4];
    return data && typeof data === "object" ? nameOrNull(data.agent) : null;
  }

  function handoffEnds(ev) {
    const data = ev[4];
    if (ev[2] !== "handoff" || !data || typeof data !== "object") return null;
    return [nameOrNull(data.from), nameOrNull(data.to)];
  }

  // Whether an event is one of the agent's (null: of nobody named): what it did, the
  // handoffs to or from it, and the run's start and end (as the server's ?agent= does).
  function concerns(ev, agent) {
    if (ALWAYS.has(ev[2]) || agentOf(ev) === agent) return true;
    const ends = handoffEnds(ev);
    return ends !== null && (ends[0] === agent || ends[1] === agent);
  }

  // The run's actors: one lane per agent in order of first appearance, then one for the
  // events that name nobody. No lanes when no event names an agent.
  function actors(run) {
    let cast = castCache.get(run);
    if (cast) return cast;
    const names = [];
    const seen = new Set();
    let unnamed = false;
    const add = (name) => {
      if (name === null) unnamed = true;
      else if (!seen.has(name)) { seen.add(name); names.push(name); }
    };
    for (const ev of run.events || []) {
      add(agentOf(ev));
      const ends = handoffEnds(ev);
      if (ends) { add(ends[0]); add(ends[1]); }
    }
    const lanes = names.length ? (unnamed ? [...names, null] : names) : [];
    cast = { names, lanes, laneOf: new Map(lanes.map((name, i) => [name, i])) };
    castCache.set(run, cast);
    return cast;
  }

  function laneName(name) {
    return name === null ? NO_AGENT : name;
  }

  function laneCells(cast, ev, row) {
    const box = el("span", "ev-lanes");
    const own = cast.laneOf.has(agentOf(ev)) ? cast.laneOf.get(agentOf(ev)) : -1;
    const ends = handoffEnds(ev);
    let from = -1;
    let to = -1;
    if (ends) {
      from = cast.laneOf.get(ends[0]);
      to = cast.laneOf.get(ends[1]);
      row.dataset.handoff = from + ">" + to;
    }
    const right = to >= from;
    for (let i = 0; i < cast.lanes.length; i++) {
      const cell = el("span", "lane lane-c" + (i % LANE_COLORS));
      if (ends) {
        if (i > Math.min(from, to) && i < Math.max(from, to)) cell.classList.add("lane-span");
        if (i === from) cell.classList.add(right ? "lane-from-r" : "lane-from-l");
        if (i === to) cell.classList.add(right ? "lane-to-r" : "lane-to-l");
      } else if (i === own) {
        cell.classList.add("lane-dot");
      }
      box.append(cell);
    }
    row.dataset.lane = String(own);
    return box;
  }

  function laneLegend(cast, choose) {
    const legend = el("div", "lane-legend");
    legend.append(el("span", "label", "Lanes (click to show one agent): "));
    cast.lanes.forEach((name, i) => {
      const chip = button("lane-name" + (name === null ? " no-agent" : ""), null,
                          () => choose(name));
      chip.dataset.lane = String(i);
      chip.append(el("span", "lane-swatch lane-c" + (i % LANE_COLORS)),
                  el("span", null, laneName(name)));
      legend.append(chip);
    });
    return legend;
  }

  // -- call_id links: a tool call's events and the turn that announced it ---------------

  function links(run) {
    let found = linkCache.get(run);
    if (found) return found;
    const byCall = new Map();
    const byIndex = new Map();
    const add = (id, index) => {
      if (typeof id !== "string" || id === "") return;
      let group = byCall.get(id);
      if (!group) byCall.set(id, (group = []));
      if (!group.includes(index)) group.push(index);
      let ids = byIndex.get(index);
      if (!ids) byIndex.set(index, (ids = []));
      if (!ids.includes(id)) ids.push(id);
    };
    (run.events || []).forEach((ev, index) => {
      const data = ev[4];
      if (!data || typeof data !== "object") return;
      add(data.call_id, index);
      if (Array.isArray(data.tool_calls)) {
        for (const call of data.tool_calls) {
          if (call && typeof call === "object") add(call.id, index);
        }
      }
    });
    found = { byCall, byIndex };
    linkCache.set(run, found);
    return found;
  }

  function linkedTo(run, index) {
    const { byCall, byIndex } = links(run);
    const others = new Set();
    for (const id of byIndex.get(index) || []) {
      for (const other of byCall.get(id)) if (other !== index) others.add(other);
    }
    return [...others].sort((a, b) => a - b);
  }

  function register(run, index, row) {
    let rows = rendered.get(run);
    if (!rows) rendered.set(run, (rows = new Map()));
    let set = rows.get(index);
    if (!set) rows.set(index, (set = new Set()));
    for (const old of set) if (!old.isConnected) set.delete(old);
    set.add(row);
  }

  function rowsOf(run, index) {
    const rows = rendered.get(run);
    const set = rows ? rows.get(index) : null;
    return set ? [...set].filter((row) => row.isConnected) : [];
  }

  function highlight(run, indices, on) {
    for (const index of indices) {
      for (const row of rowsOf(run, index)) row.classList.toggle("linked", on);
    }
  }

  // Show the event: render its chunk if the filters let it be shown, then scroll to it.
  function goTo(run, index) {
    const reveal = revealers.get(run);
    if (reveal) reveal(index);
    const row = rowsOf(run, index)[0];
    if (!row) return false;
    if (target) target.classList.remove("target");
    target = row;
    row.classList.add("target");
    row.scrollIntoView({ block: "center" });
    row.focus({ preventScroll: true });
    return true;
  }

  function linkList(run, linked) {
    const box = el("div", "links");
    box.append(el("span", "label", "linked by call id: "));
    for (const other of linked) {
      const ev = run.events[other];
      const link = button("call-link small", "seq " + ev[0] + " " + ev[2], () => {
        if (!goTo(run, other)) link.title = "hidden by the filters";
      });
      link.dataset.index = String(other);
      box.append(link, " ");
    }
    return box;
  }

  // -- the causal graph's edges, on demand ----------------------------------------------

  function graphOf(run) {
    let snapshot = null;
    for (let i = (run.events || []).length - 1; i >= 0 && snapshot === null; i--) {
      if (run.events[i][2] === "causal.graph.snapshot") snapshot = run.events[i][4];
    }
    if (!snapshot || typeof snapshot !== "object") return null;
    const valid = (item) => item && typeof item === "object";
    const nodes = (Array.isArray(snapshot.nodes) ? snapshot.nodes : [])
      .filter((n) => valid(n) && typeof n.id === "string");
    const edges = (Array.isArray(snapshot.edges) ? snapshot.edges : [])
      .filter((e) => valid(e) && typeof e.from === "string" && typeof e.to === "string");
    return { nodes: new Map(nodes.map((n) => [n.id, n])), edges };
  }

  // The events of a node: a tool call's (by its call id), or a turn's (by its step).
  function nodeEvents(run, graph, id) {
    if (id.startsWith("call:")) return links(run).byCall.get(id.slice(5)) || [];
    if (!id.startsWith("turn:")) return [];
    const node = graph.nodes.get(id);
    const step = node && typeof node.step === "number" ? node.step : parseInt(id.slice(5), 10);
    const found = [];
    run.events.forEach((ev, i) => {
      if (ev[1] === step && ev[2].startsWith("llm.turn.")) found.push(i);
    });
    return found;
  }

  function edgeText(edge) {
    const kind = typeof edge.kind === "string" ? edge.kind : "?";
    const value = edge.value === null || edge.value === undefined
      ? "" : ": " + JSON.stringify(edge.value);
    return edge.to + " <- " + edge.from + " (" + kind + value + ")";
  }

  function graphPanel(run) {
    const graph = graphOf(run);
    if (!graph) return null;
    const box = el("section", "graph");
    const list = el("ol", "graph-edges");
    list.hidden = true;
    const label = () => (list.hidden ? "Show" : "Hide") + " the causal graph (" +
      graph.nodes.size + " nodes, " + graph.edges.length + " edges)";
    const toggle = button("small", "", () => {
      if (!list.childElementCount) fillGraph(run, graph, list);
      list.hidden = !list.hidden;
      toggle.textContent = label();
      toggle.setAttribute("aria-expanded", String(!list.hidden));
    });
    toggle.id = "graph-toggle";
    toggle.textContent = label();
    toggle.setAttribute("aria-expanded", "false");
    box.append(toggle, list);
    return box;
  }

  function fillGraph(run, graph, list) {
    if (!graph.edges.length) list.append(el("li", "nothing", "(no edges)"));
    for (const edge of graph.edges) {
      const item = el("li", "graph-edge");
      item.dataset.from = edge.from;
      item.dataset.to = edge.to;
      const involved = [...nodeEvents(run, graph, edge.from), ...nodeEvents(run, graph, edge.to)];
      const jump = button("edge-link", edgeText(edge), () => {
        const later = nodeEvents(run, graph, edge.to);
        if (later.length) goTo(run, later[later.length - 1]);
        highlight(run, involved, true);
      });
      jump.addEventListener("mouseenter", () => highlight(run, involved, true));
      jump.addEventListener("mouseleave", () => highlight(run, involved, false));
      item.append(jump);
      list.append(item);
    }
  }

  // -- an event row -----------------------------------------------------------------------

  // ``cast``: the run's actors when it names any; ``lanes``: draw them (else, with a cast,
  // the agent's name is shown as text, as in a diff's narrow columns).
  function eventRow(run, index, lanes) {
    const ev = run.events[index];
    const cast = actors(run);
    const row = el("div", "event");
    row.dataset.type = ev[2];
    row.dataset.step = String(ev[1]);
    row.dataset.index = String(index);
    row.tabIndex = 0;
    row.setAttribute("role", "button");
    row.setAttribute("aria-expanded", "false");
    const agent = agentOf(ev);
    row.title = ev[2] + "  " + ev[3] + (cast.lanes.length ? "  (" + laneName(agent) + ")" : "");
    if (cast.lanes.length) {
      row.dataset.agent = agent === null ? "" : agent;
      if (lanes) row.append(laneCells(cast, ev, row));
      else row.append(el("span", "ev-agent", laneName(agent)));
    }
    row.append(el("span", "ev-step", ev[1]), el("span", "ev-seq", ev[0]),
               el("span", "ev-type", ev[2]), el("span", "ev-desc", ev[3]));
    row.addEventListener("click", () => togglePayload(row, run, index));
    row.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") {
        e.preventDefault();
        togglePayload(row, run, index);
      }
    });
    const linked = linkedTo(run, index);
    if (linked.length) {
      row.classList.add("has-links");
      const on = () => { row.classList.add("linking"); highlight(run, linked, true); };
      const off = () => { row.classList.remove("linking"); highlight(run, linked, false); };
      row.addEventListener("mouseenter", on);
      row.addEventListener("mouseleave", off);
      row.addEventListener("focus", on);
      row.addEventListener("blur", off);
    }
    register(run, index, row);
    return row;
  }

  // -- filters ------------------------------------------------------------------------

  function typeCounts(runs) {
    const counts = new Map();
    for (const run of runs) {
      for (const ev of run.events || []) counts.set(ev[2], (counts.get(ev[2]) || 0) + 1);
    }
    return [...counts.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  }

  function numberInput(id, label, placeholder) {
    const box = el("label");
    const input = el("input");
    input.type = "number";
    input.min = "0";
    input.id = id;
    input.placeholder = placeholder;
    box.append(el("span", "label", label), document.createElement("br"), input);
    return [box, input];
  }

  // The agents of the runs shown, for the filter: each named one, then nobody (null).
  function agentChoices(runs) {
    const names = [];
    let unnamed = false;
    for (const run of runs) {
      for (const name of actors(run).lanes) {
        if (name === null) unnamed = true;
        else if (!names.includes(name)) names.push(name);
      }
    }
    return names.length && unnamed ? [...names, null] : names;
  }

  function agentSelect(agents, onChange) {
    const box = el("label");
    const select = el("select");
    select.id = "agent-filter";
    select.append(new Option("all agents", ""));
    agents.forEach((name, i) => {
      const option = new Option(laneName(name), String(i));
      if (name === null) option.className = "no-agent";
      else option.dataset.agent = name;
      select.append(option);
    });
    const wanted = agents.findIndex((name) => name !== null && name === wantedAgent);
    if (wanted >= 0) select.value = String(wanted);
    select.addEventListener("change", onChange);
    box.append(el("span", "label", "agent"), document.createElement("br"), select);
    const read = () => (select.value === "" ? null : { name: agents[Number(select.value)] });
    const choose = (name) => {
      const i = agents.indexOf(name);
      select.value = i >= 0 ? String(i) : "";
      onChange();
    };
    return { box, read, choose };
  }

  function filterBar(types, onChange, agents) {
    const bar = el("div", "filters");
    const fieldset = el("fieldset");
    fieldset.id = "type-filter";
    const legend = el("legend", null, "Event types ");
    const checks = [];
    const setAll = (on) => {
      checks.forEach((c) => { c.checked = on; });
      onChange();
    };
    const all = button("small", "all", () => setAll(true));
    all.id = "type-all";
    const none = button("small", "none", () => setAll(false));
    none.id = "type-none";
    legend.append(all, " ", none);
    fieldset.append(legend);
    for (const [type, count] of types) {
      const option = el("label", "type-option");
      const check = el("input");
      check.type = "checkbox";
      check.value = type;
      check.checked = true;
      check.addEventListener("change", onChange);
      option.append(check, el("span", null, type), el("span", "count", "(" + count + ")"));
      fieldset.append(option);
      checks.push(check);
    }
    const [fromBox, from] = numberInput("step-from", "from step", "first");
    const [toBox, to] = numberInput("step-to", "to step", "last");
    const searchBox = el("label");
    const search = el("input");
    search.type = "search";
    search.id = "event-search";
    search.placeholder = "type, description or payload";
    searchBox.append(el("span", "label", "search events"), document.createElement("br"), search);
    let timer = 0;
    const later = () => {
      clearTimeout(timer);
      timer = setTimeout(onChange, 120);
    };
    from.addEventListener("input", later);
    to.addEventListener("input", later);
    search.addEventListener("input", later);
    bar.append(fieldset, fromBox, toBox, searchBox);
    const byAgent = agents && agents.length ? agentSelect(agents, onChange) : null;
    if (byAgent) bar.append(byAgent.box);
    const bound = (input) => {
      const n = parseInt(input.value, 10);
      return Number.isFinite(n) ? n : null;
    };
    const read = () => {
      const chosen = checks.filter((c) => c.checked).map((c) => c.value);
      return {
        types: chosen.length === checks.length ? null : new Set(chosen),
        from: bound(from),
        to: bound(to),
        query: search.value.trim().toLowerCase(),
        agent: byAgent ? byAgent.read() : null,
      };
    };
    return { bar, read, choose: byAgent ? byAgent.choose : () => {} };
  }

  function haystack(run, index) {
    let texts = haystacks.get(run);
    if (!texts) haystacks.set(run, (texts = []));
    let text = texts[index];
    if (text === undefined) {
      const ev = run.events[index];
      text = texts[index] = (ev[2] + "\n" + ev[3] + "\n" + JSON.stringify(ev[4])).toLowerCase();
    }
    return text;
  }

  function matcher(filter, run) {
    return (index) => {
      const ev = run.events[index];
      if (filter.types && !filter.types.has(ev[2])) return false;
      if (filter.from !== null && ev[1] < filter.from) return false;
      if (filter.to !== null && ev[1] > filter.to) return false;
      if (filter.agent && !concerns(ev, filter.agent.name)) return false;
      return !filter.query || haystack(run, index).includes(filter.query);
    };
  }

  // A list rendered a window at a time: the next chunk when "show more" is clicked or
  // scrolled to; when the window opens around a later item, earlier chunks on request.
  function chunked(list, size, renderItem, describe) {
    const status = el("p", "shown");
    const earlier = button("show-earlier", "", () => previous());
    const more = button("show-more", "", () => later());
    let items = [];
    let begin = 0;
    let end = 0;
    const render = (from, to) => {
      const fragment = document.createDocumentFragment();
      for (let i = from; i < to; i++) fragment.append(renderItem(items[i], i));
      return fragment;
    };
    const update = () => {
      status.textContent = describe(begin, end, items.length);
      more.hidden = end >= items.length;
      more.textContent = "Show " + Math.min(size, items.length - end) + " more";
      earlier.hidden = begin <= 0;
      earlier.textContent = "Show " + Math.min(size, begin) + " earlier";
    };
    const later = () => {
      const stop = Math.min(items.length, end + size);
      list.append(render(end, stop));
      end = stop;
      update();
    };
    const previous = () => {
      const start = Math.max(0, begin - size);
      const height = view.scrollHeight;
      list.prepend(render(start, begin));
      view.scrollTop += view.scrollHeight - height;  // what was shown stays in place
      begin = start;
      update();
    };
    if ("IntersectionObserver" in window) {
      observer = new IntersectionObserver((seen) => {
        if (seen.some((s) => s.isIntersecting) && !more.hidden) later();
      }, { root: view, rootMargin: "400px" });
      observer.observe(more);
    }
    const fill = (newItems, around) => {
      items = newItems;
      begin = around >= size ? around - 20 : 0;
      end = begin;
      list.replaceChildren();
      later();
    };
    // Render up to the item (one the filters let through): whether it is now shown.
    const reveal = (item) => {
      const at = items.indexOf(item);
      if (at < 0) return false;
      while (at >= end) later();
      while (at < begin) previous();
      return true;
    };
    return { status, earlier, more, fill, reveal };
  }

  // -- a run --------------------------------------------------------------------------

  function totals(t) {
    const box = el("dl", "totals");
    const add = (label, value) => {
      const item = el("div");
      item.append(el("dt", null, label), el("dd", null, value));
      box.append(item);
    };
    const calls = t.tool_calls.by_name.map(([name, count]) => name + " x" + count).join(", ");
    const cached = [];
    if (t.cache_read_tokens) cached.push(t.cache_read_tokens + " cache read");
    if (t.cache_write_tokens) cached.push(t.cache_write_tokens + " cache write");
    add("outcome", t.outcome);
    add("steps / turns", t.first_step + "-" + t.steps + " / " + t.turns);
    if (t.turns && t.unreported_turns >= t.turns) {
      add("tokens", "not reported");
    } else {
      add("input tokens", t.input_tokens + (cached.length ? " (" + cached.join(", ") + ")" : ""));
      add("output tokens", t.output_tokens + (t.unreported_turns ?
        " (usage from " + (t.turns - t.unreported_turns) + " of " + t.turns + " turns)" : ""));
    }
    if (t.tokens_per_second !== null && t.tokens_per_second !== undefined) {
      add("output speed", t.tokens_per_second + " tokens/s" +
        (t.timed_turns === t.turns ? "" : " (" + t.timed_turns + " of " + t.turns + " turns timed)"));
    }
    add("cost", formatCost(t.cost_usd));
    add("errors", t.errors);
    add("tool calls", t.tool_calls.total + (calls ? " (" + calls + ")" : ""));
    return box;
  }

  function runView(entry) {
    heading(entry);
    view.append(el("p", "path", entry.path));
    if (entry.notice) view.append(el("p", "notice", entry.notice));
    if (!entry.events || !entry.events.length) {
      if (!entry.notice) view.append(el("p", "notice", "This rollout has no events."));
      return;
    }
    view.append(totals(entry.totals));
    const cast = actors(entry);
    const graph = graphPanel(entry);
    if (graph) view.append(graph);
    const filters = filterBar(typeCounts([entry]), () => refresh(), agentChoices([entry]));
    const table = el("div", "timeline");
    const head = el("div", "timeline-head");
    if (cast.lanes.length) {
      table.classList.add("with-lanes");
      table.style.setProperty("--lanes", String(cast.lanes.length));
      const laneHead = el("span", "ev-lanes");
      cast.lanes.forEach((name, i) => {
        const cell = el("span", "lane lane-c" + (i % LANE_COLORS), String(i + 1));
        cell.title = laneName(name);
        laneHead.append(cell);
      });
      head.append(laneHead);
      view.append(laneLegend(cast, (name) => filters.choose(name)));
    }
    head.append(el("span", null, "step"), el("span", null, "seq"), el("span", null, "type"),
                el("span", null, "description"));
    const list = el("div", "events");
    const rows = chunked(list, CHUNK, (index) => eventRow(entry, index, true),
      (begin, end, total) => (total
        ? "Showing events " + (begin + 1) + " to " + end + " of the " + total + " that match"
        : "No events match the filters") +
        " (" + entry.events.length + " in the run); click an event for its payload.");
    table.append(head, rows.earlier, list);
    view.append(filters.bar, rows.status, table, rows.more);
    revealers.set(entry, rows.reveal);
    const refresh = () => {
      const match = matcher(filters.read(), entry);
      const shown = [];
      for (let i = 0; i < entry.events.length; i++) if (match(i)) shown.push(i);
      rows.fill(shown, 0);
    };
    refresh();
  }

  // -- a diff -------------------------------------------------------------------------

  function line(parent, label, text, className) {
    const p = el("p", className);
    p.append(el("span", "label", label + ": "), el("span", null, text));
    parent.append(p);
    return p;
  }

  function changesTable(first) {
    const table = el("table", "changes");
    const head = el("tr");
    head.append(el("th", null, "field"), el("th", null, "golden"), el("th", null, "this run"));
    table.append(head);
    for (const change of first.changes) {
      const row = el("tr");
      row.append(el("td", null, change.path), el("td", null, change.golden),
                 el("td", null, change.run));
      table.append(row);
    }
    return table;
  }

  function summary(entry, cmp, jump) {
    const box = el("section", "summary");
    const counts = cmp.counts;
    if (entry.headline) {
      const h = entry.headline;
      line(box, "Divergence", h.kind + " at step " + h.step + " (attributed to the " +
        h.attribution + "): " + h.detail);
    } else if (cmp.identical) {
      box.append(el("p", null, "This run matches its golden."));
    }
    const all = cmp.steps;  // in step order
    const span = all.length ? "Steps " + all[0].step + "-" + all[all.length - 1].step : "Steps";
    line(box, span, counts.identical + " identical, " + counts.diverged + " diverged, " +
      counts.only_in_a + " only in golden, " + counts.only_in_b + " only in this run");
    if (entry.score) line(box, "Score", entry.score, "score");
    const first = cmp.first;
    if (first) {
      const p = line(box, "First divergence", "step " + first.step + " (" +
        (STATUS_TEXT[first.status] || first.status) + "), event " + (first.index + 1) +
        " of the step ");
      const go = button("small", "show", () => jump(true));
      go.id = "first-divergence-link";
      p.append(go);
      if (first.changes.length) {
        box.append(changesTable(first));
        if (first.more_changes) {
          box.append(el("p", "count", "... and " + first.more_changes + " more changed fields"));
        }
      } else if (first.golden_event === null || first.run_event === null) {
        box.append(el("p", null, first.golden_event === null
          ? "Only this run has that event." : "Only the golden has that event."));
      }
    }
    if (entry.fork) {
      const fork = el("div", "fork");
      fork.append(el("p", null, entry.fork.text), el("code", null, entry.fork.command));
      box.append(fork);
    }
    return box;
  }

  function cell(run, indices, highlight) {
    const side = el("div", "side");
    if (!indices.length) {
      side.append(el("span", "nothing", "(nothing)"));
      return side;
    }
    const add = (from, to) => {
      const fragment = document.createDocumentFragment();
      for (let i = from; i < to; i++) {
        const row = eventRow(run, indices[i], false);
        if (indices[i] === highlight) row.classList.add("differs");
        fragment.append(row);
      }
      side.append(fragment);
    };
    add(0, Math.min(indices.length, CELL_LIMIT));
    if (indices.length > CELL_LIMIT) {
      const rest = button("show-rest small", "show " + (indices.length - CELL_LIMIT) +
        " more events of this step", () => {
        rest.remove();
        add(CELL_LIMIT, indices.length);
      });
      side.append(rest);
    }
    return side;
  }

  function diffView(entry) {
    heading(entry);
    const golden = entry.golden;
    const run = entry.run;
    const cmp = entry.comparison;
    const paths = el("div", "paths");
    line(paths, "golden", golden.path, "path");
    line(paths, "this run", run.path, "path");
    view.append(paths);
    if (golden.notice) view.append(el("p", "notice", "Golden refused: " + golden.notice));
    if (run.notice) view.append(el("p", "notice", "Run refused: " + run.notice));
    let firstRow = null;
    const jump = (always) => {
      if (!firstRow) return;
      const row = firstRow.getBoundingClientRect();
      const box = view.getBoundingClientRect();
      if (always === true || row.top < box.top || row.bottom > box.bottom) {
        firstRow.scrollIntoView({ block: "center" });
      }
    };
    if (cmp) view.append(summary(entry, cmp, jump));
    const report = el("details");
    report.open = true;
    report.hidden = !(entry.report && entry.report.length);
    report.append(el("summary", null, "Failure report"),
                  el("pre", "report", (entry.report || []).join("\n")));
    if (!cmp) {
      view.append(report);
      return;
    }
    const first = cmp.first;
    const filters = filterBar(typeCounts([golden, run]), () => refresh(),
                              agentChoices([golden, run]));
    const table = el("div", "aligned");
    const head = el("div", "step-head");
    head.append(el("span", null, "step"), el("span", null, "golden"),
                el("span", null, "this run"));
    const list = el("div", "step-rows");
    const renderRow = (item) => {
      const s = item.step;
      const row = el("div", "step-row st-" + (STATUS_TEXT[s.status] ? s.status : "other"));
      row.dataset.step = String(s.step);
      row.dataset.status = String(s.status);
      const label = el("div", "step-label", "step " + s.step);
      label.append(el("span", "count", STATUS_TEXT[s.status] || String(s.status)));
      const isFirst = first !== null && s.step === first.step;
      row.append(label, cell(golden, item.golden, isFirst ? first.golden_event : null),
                 cell(run, item.run, isFirst ? first.run_event : null));
      if (isFirst) {
        row.classList.add("first-divergence");
        firstRow = row;
      }
      return row;
    };
    const rows = chunked(list, STEP_CHUNK, renderRow, (begin, end, total) => (total
      ? "Showing steps " + (begin + 1) + " to " + end + " of the " + total + " that match"
      : "No steps match the filters") + "; identical steps are muted.");
    table.append(head, rows.earlier, list);
    view.append(filters.bar, rows.status, table, rows.more, report);
    const refresh = () => {
      const f = filters.read();
      const inGolden = matcher(f, golden);
      const inRun = matcher(f, run);
      const narrowed = f.types !== null || f.query !== "" || f.agent !== null;
      const items = [];
      let around = 0;
      for (const s of cmp.steps) {
        if (f.from !== null && s.step < f.from) continue;
        if (f.to !== null && s.step > f.to) continue;
        const item = { step: s, golden: s.golden.filter(inGolden), run: s.run.filter(inRun) };
        if (narrowed && !item.golden.length && !item.run.length) continue;
        items.push(item);
        if (first && s.step === first.step) around = items.length - 1;
      }
      firstRow = null;
      rows.fill(items, around);
    };
    refresh();
    jump();
  }

  boot();
})();
