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
  const view = document.getElementById("view");
  const haystacks = new WeakMap();
  let entries = [];
  let buttons = [];
  let observer = null;

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
    return entry.notice ? "refused" : entry.kind === "diff" ? "diff" : "run";
  }

  function statusClass(status) {
    if (status === "failed" || status === "error") return "badge status-failed";
    if (status === "passed") return "badge status-passed";
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
    const token = new URLSearchParams(location.hash.slice(1)).get("token") || "";
    const advice = token
      ? "The server may have stopped, or the token may be stale: open the link it printed again."
      : "The address has no #token=...: open the exact link the server printed.";
    fetch(source.data_url, {
      headers: { "X-Rollout-Token": token },
      cache: "no-store",
      credentials: "same-origin",
      redirect: "error",
    })
      .then((response) => {
        if (!response.ok) {
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
      top.append(el("span", statusClass(entry.status), statusText(entry)),
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
    view.replaceChildren();
    view.scrollTop = 0;
    if (entry.kind === "diff") diffView(entry);
    else runView(entry);
  }

  function heading(entry) {
    const head = el("header", "view-head");
    head.append(el("h2", null, entry.name),
                el("span", statusClass(entry.status), statusText(entry)));
    view.append(head);
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

  function togglePayload(row, ev) {
    const next = row.nextElementSibling;
    if (next && next.classList.contains("payload")) {
      next.remove();
      row.classList.remove("open");
      row.setAttribute("aria-expanded", "false");
      return;
    }
    const pre = el("pre", "payload");
    const text = JSON.stringify(ev[4], null, 2);
    if (text.length > PRETTY_LIMIT) {
      pre.textContent = text;
    } else {
      const fragment = document.createDocumentFragment();
      writeJson(ev[4], "", fragment);
      pre.append(fragment);
    }
    row.after(pre);
    row.classList.add("open");
    row.setAttribute("aria-expanded", "true");
  }

  function eventRow(run, index) {
    const ev = run.events[index];
    const row = el("div", "event");
    row.dataset.type = ev[2];
    row.dataset.step = String(ev[1]);
    row.dataset.index = String(index);
    row.tabIndex = 0;
    row.setAttribute("role", "button");
    row.setAttribute("aria-expanded", "false");
    row.title = ev[2] + "  " + ev[3];
    row.append(el("span", "ev-step", ev[1]), el("span", "ev-seq", ev[0]),
               el("span", "ev-type", ev[2]), el("span", "ev-desc", ev[3]));
    row.addEventListener("click", () => togglePayload(row, ev));
    row.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") {
        e.preventDefault();
        togglePayload(row, ev);
      }
    });
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

  function filterBar(types, onChange) {
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
      };
    };
    return { bar, read };
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
    return { status, earlier, more, fill };
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
    const filters = filterBar(typeCounts([entry]), () => refresh());
    const table = el("div", "timeline");
    const head = el("div", "timeline-head");
    head.append(el("span", null, "step"), el("span", null, "seq"), el("span", null, "type"),
                el("span", null, "description"));
    const list = el("div", "events");
    const rows = chunked(list, CHUNK, (index) => eventRow(entry, index),
      (begin, end, total) => (total
        ? "Showing events " + (begin + 1) + " to " + end + " of the " + total + " that match"
        : "No events match the filters") +
        " (" + entry.events.length + " in the run); click an event for its payload.");
    table.append(head, rows.earlier, list);
    view.append(filters.bar, rows.status, table, rows.more);
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
        const row = eventRow(run, indices[i]);
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
    const filters = filterBar(typeCounts([golden, run]), () => refresh());
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
      const narrowed = f.types !== null || f.query !== "";
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
