(function () {
  "use strict";
  var table = document.getElementById("kernels");
  if (!table) { return; }
  var dataNode = document.getElementById("occupancy-data");
  var data = JSON.parse(dataNode ? dataNode.textContent : "{}");
  var body = table.tBodies[0];
  var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
  var filter = document.getElementById("filter");
  var SVG = "http://www.w3.org/2000/svg";

  // ---- rows: the table's own rows, each maybe followed by its details row --------------------
  function dataRows() {
    return Array.prototype.filter.call(body.rows, function (row) { return row.className.indexOf("detail") < 0; });
  }
  function detailOf(row) {
    var next = row.nextElementSibling;
    return next && next.className === "detail" ? next : null;
  }

  // ---- sorting: by a cell's data-sort, else its text; numbers before words -------------------
  function sortKey(cell) {
    var key = cell.getAttribute("data-sort");
    if (key === null) { key = cell.textContent; }
    var number = parseFloat(key);
    return isNaN(number) ? key : number;
  }
  function compareKeys(x, y) {
    var xNumber = typeof x === "number", yNumber = typeof y === "number";
    if (xNumber && yNumber) { return x - y; }
    if (xNumber !== yNumber) { return xNumber ? 1 : -1; }
    return x.localeCompare(y, undefined, { numeric: true });
  }
  function sortBy(column, descending) {
    headers.forEach(function (other) { other.removeAttribute("aria-sort"); });
    headers[column].setAttribute("aria-sort", descending ? "descending" : "ascending");
    var rows = dataRows();
    var keys = rows.map(function (row) { return sortKey(row.cells[column]); });
    var details = rows.map(detailOf);
    var order = rows.map(function (row, index) { return index; });
    order.sort(function (a, b) {
      var result = compareKeys(keys[a], keys[b]);
      if (descending) { result = -result; }
      return result !== 0 ? result : a - b;
    });
    order.forEach(function (index) {
      body.appendChild(rows[index]);
      if (details[index]) { body.appendChild(details[index]); }
    });
  }
  headers.forEach(function (th, column) {
    th.addEventListener("click", function () { sortBy(column, th.getAttribute("aria-sort") === "ascending"); });
  });

  // ---- filtering: every word must be in the row's text or level; lint:NAME matches a chip ----
  function matches(row, words) {
    var text = (row.textContent + " " + row.className).toLowerCase();
    return words.every(function (word) {
      if (word.indexOf("lint:") === 0) {
        var lint = word.slice(5);
        return Array.prototype.some.call(row.querySelectorAll(".f"), function (chip) { return chip.textContent === lint; });
      }
      return text.indexOf(word) >= 0;
    });
  }
  function applyFilter() {
    var words = filter.value.toLowerCase().split(/\s+/).filter(function (word) { return word.length > 0; });
    var rows = dataRows(), shown = 0;
    rows.forEach(function (row) {
      var keep = matches(row, words);
      row.hidden = !keep;
      var detail = detailOf(row);
      if (detail) { detail.hidden = !keep; }
      if (keep) { shown += 1; }
    });
    document.getElementById("shown").textContent = shown + " of " + rows.length + " rows";
  }
  if (filter) { filter.addEventListener("input", applyFilter); }

  // ---- numbers as the Rust renderer writes them ----------------------------------------------
  function fmtBytes(bytes) {
    if (bytes === 0) { return "0"; }
    if (bytes < 1024) { return bytes + " B"; }
    if (bytes % 1024 === 0) { return bytes / 1024 + " KiB"; }
    // One decimal, ties to even, in integers: what Rust's {:.1} prints.
    var tenths = Math.floor(bytes * 10 / 1024), rest = bytes * 10 % 1024;
    if (rest * 2 > 1024 || (rest * 2 === 1024 && tenths % 2 === 1)) { tenths += 1; }
    return Math.floor(tenths / 10) + "." + tenths % 10 + " KiB";
  }
  function fmtPct(percent) { return percent.toFixed(1) + "%"; }
  function fmtX(axis, x) {
    if (axis === "block") { return x + " threads"; }
    if (axis === "registers") { return x + " regs"; }
    return fmtBytes(x);
  }
  function tickLabel(axis, x) { return axis === "smem" && x > 0 ? Math.floor(x / 1024) + "K" : String(x); }
  function limiters(bits) {
    var names = (data.limiters || []).filter(function (name, bit) { return bits & (1 << bit); });
    return names.length ? names.join(" + ") : "nothing";
  }

  // ---- charts: a curve's runs of equal blocks per SM, drawn on its frame ---------------------
  var W = 380, H = 230, L = 44, R = 14, T = 26, B = 42, PW = W - L - R, PH = H - T - B, BASE = T + PH;
  function svg(name, attributes, text) {
    var node = document.createElementNS(SVG, name);
    Object.keys(attributes).forEach(function (key) { node.setAttribute(key, attributes[key]); });
    if (text !== undefined) { node.textContent = text; }
    return node;
  }
  function drawFrame(chart, frame, sx, sy) {
    chart.appendChild(svg("text", { "class": "title", x: L, y: 15 }, "occupancy vs " + frame.title));
    for (var quarter = 0; quarter <= 4; quarter += 1) {
      var y = sy(quarter * 25);
      chart.appendChild(svg("line", { "class": "grid", x1: L, x2: L + PW, y1: y, y2: y }));
      chart.appendChild(svg("text", { x: L - 5, y: y + 4, "text-anchor": "end" }, quarter * 25 + "%"));
    }
    frame.ticks.forEach(function (tick) {
      var x = sx(tick[0]);
      chart.appendChild(svg("line", { "class": "axis", x1: x, x2: x, y1: BASE, y2: BASE + 4 }));
      chart.appendChild(svg("text", { x: x, y: BASE + 16, "text-anchor": "middle" }, tick[1]));
    });
    chart.appendChild(svg("line", { "class": "axis", x1: L, x2: L + PW, y1: BASE, y2: BASE }));
    chart.appendChild(svg("line", { "class": "axis", x1: L, x2: L, y1: T, y2: BASE }));
    chart.appendChild(svg("text", { x: L + PW / 2, y: H - 6, "text-anchor": "middle" }, frame.title));
  }
  function drawCurve(chart, frame, steps, sx, sy) {
    if (steps.length === 0) { return; }
    var first = steps[0];
    var path = "M" + sx(first[0]).toFixed(1) + "," + sy(first[3]).toFixed(1);
    for (var index = 1; index < steps.length; index += 1) {
      path += "H" + sx(steps[index][0]).toFixed(1) + "V" + sy(steps[index][3]).toFixed(1);
    }
    path += "H" + sx(Math.max(steps[steps.length - 1][1], frame.max)).toFixed(1);
    chart.appendChild(svg("path", { "class": "area", d: path + "V" + BASE + "H" + sx(first[0]).toFixed(1) + "Z" }));
    chart.appendChild(svg("path", { "class": "curve", d: path }));
    for (var at = 1; at < steps.length; at += 1) {
      if (steps[at][2] === steps[at - 1][2]) { continue; }
      var mark = svg("path", { "class": "cliff", d: "M" + sx(steps[at][0]).toFixed(1) + "," + (BASE - 6) + "l-3.5,6h7z" });
      mark.appendChild(svg("title", {}, "cliff at " + fmtX(frame.axis, steps[at][0])));
      chart.appendChild(mark);
    }
  }
  function drawCurrent(chart, frame, steps, at, x, sx, sy) {
    var step = steps[at], above = steps[at + 1];
    if (above) {
      var cx = sx(above[0]), end = cx > L + PW * 0.75;
      chart.appendChild(svg("text", { "class": "cliff", x: end ? cx - 3 : cx + 3, y: BASE - 10, "text-anchor": end ? "end" : "start" },
        tickLabel(frame.axis, above[0]) + " → " + above[2] + " blk"));
    }
    var px = sx(x), py = sy(step[3]), right = px > L + PW * 0.6;
    var label = step[2] + " blk, " + fmtPct(step[3]);
    chart.appendChild(svg("line", { "class": "now", x1: px, x2: px, y1: T, y2: BASE }));
    var dot = svg("circle", { "class": "now", cx: px, cy: py, r: 4.5 });
    dot.appendChild(svg("title", {}, "now: " + fmtX(frame.axis, x) + " → " + label));
    chart.appendChild(dot);
    chart.appendChild(svg("text", { "class": "now", x: right ? px - 6 : px + 6, y: py < T + 14 ? py + 16 : py - 8, "text-anchor": right ? "end" : "start" }, label));
  }
  // One sentence under a chart: where the kernel is and where the nearest cliffs are.
  function caption(frame, steps, at, x) {
    if (at < 0) { return "The kernel's " + frame.title + " is outside this chart."; }
    var step = steps[at], above = steps[at + 1], below = steps[at - 1];
    var text = "At " + fmtX(frame.axis, x) + ": " + step[2] + " blocks/SM (" + fmtPct(step[3]) + "), bound by " + limiters(step[4]) + ".";
    if (above) { text += " From " + fmtX(frame.axis, above[0]) + ": " + above[2] + " blocks/SM (" + fmtPct(above[3]) + ")."; }
    if (below) { text += " At " + fmtX(frame.axis, below[1]) + ": " + below[2] + " blocks/SM (" + fmtPct(below[3]) + ")."; }
    return text;
  }
  function chart(curveId, x) {
    var curve = data.curves[curveId], frame = data.frames[curve.f], steps = curve.s;
    function sx(value) { return L + value / Math.max(frame.max, 1) * PW; }
    function sy(percent) { return T + (1 - Math.min(Math.max(percent / 100, 0), 1)) * PH; }
    var figure = document.createElement("figure");
    var node = svg("svg", { "class": "chart", "data-axis": frame.axis, width: W, height: H, viewBox: "0 0 " + W + " " + H,
      role: "img", "aria-label": "occupancy against " + frame.title });
    drawFrame(node, frame, sx, sy);
    drawCurve(node, frame, steps, sx, sy);
    var at = -1;
    steps.forEach(function (step, index) { if (step[0] <= x && x <= step[1]) { at = index; } });
    if (at >= 0) { drawCurrent(node, frame, steps, at, x, sx, sy); }
    figure.appendChild(node);
    var text = document.createElement("figcaption");
    text.textContent = caption(frame, steps, at, x);
    figure.appendChild(text);
    return figure;
  }

  // ---- details: facts, findings, loop nest, charts -------------------------------------------
  function element(name, className, text) {
    var node = document.createElement(name);
    if (className) { node.className = className; }
    if (text !== undefined) { node.textContent = text; }
    return node;
  }
  function factList(facts) {
    var list = element("dl", "facts"), items = [];
    if (facts.src) { items.push(["source", facts.src]); }
    if (facts.decl) { items.push(["declared", facts.decl + (facts.rust ? " (" + facts.rust + ")" : "")]); }
    if (facts.p !== undefined) { items.push(["program", data.notes[facts.p]]); }
    if (!facts.dev) {
      items.push(["resident", facts.bk + " blocks/SM, " + facts.w + " warps/SM"]);
      var smem = fmtBytes(facts.ss) + " static + " + fmtBytes(facts.ds || 0) + " dynamic";
      if (facts.md !== undefined) { smem += " (opted in to " + fmtBytes(facts.md) + ")"; }
      items.push(["shared memory", smem + ", carveout " + (facts.co === undefined ? "default" : facts.co + "%")]);
      var bounds = [];
      if (facts.mt !== undefined) { bounds.push("max " + facts.mt + " threads/block"); }
      if (facts.mb !== undefined) { bounds.push("min " + facts.mb + " blocks/SM"); }
      if (facts.mr !== undefined) { bounds.push("max " + facts.mr + " registers"); }
      if (bounds.length) { items.push(["compiled bounds", bounds.join(", ")]); }
      items.push(["headroom", headroom(facts.h)]);
    }
    items.forEach(function (item) {
      list.appendChild(element("dt", "", item[0]));
      list.appendChild(element("dd", "", item[1]));
    });
    return list;
  }
  function headroom(h) {
    var lose = [], gain = [];
    if (h[0] !== null) { lose.push("+" + h[0] + " registers/thread"); }
    if (h[2] !== null) { lose.push("+" + fmtBytes(h[2]) + " shared memory/block"); }
    if (h[1] !== null) { gain.push("-" + h[1] + " registers/thread"); }
    if (h[3] !== null) { gain.push("-" + fmtBytes(h[3]) + " shared memory/block"); }
    var text = lose.length ? lose.join(" or ") + " before a block is lost" : "no register or shared memory cliff above";
    return text + "; " + (gain.length ? gain.join(" or ") + " to gain one" : "no block to gain from registers or shared memory");
  }
  function renderDetails(row) {
    var index = Number(row.id.slice(1)), facts = data.rows[index];
    var article = element("article", "kernel");
    article.setAttribute("data-arch", facts.a);
    var heading = element("h3", "", row.querySelector("td.name").textContent + " ");
    heading.appendChild(element("span", "note", "on " + facts.a));
    article.appendChild(heading);
    if (facts.sym) { article.appendChild(element("p", "sym", facts.sym)); }
    article.appendChild(factList(facts));
    if (facts.dev) { article.appendChild(element("p", "", "A device function: it has no launch and no occupancy of its own.")); }
    if (facts.f) {
      var list = element("ul", "findings");
      facts.f.forEach(function (id) {
        var finding = document.getElementById("f" + id);
        if (finding) { var copy = finding.cloneNode(true); copy.removeAttribute("id"); list.appendChild(copy); }
      });
      if (facts.fm) { list.appendChild(element("li", "more", facts.fm + " more findings of this row in the findings above")); }
      article.appendChild(list);
    }
    var nest = document.getElementById("sass-k" + index);
    if (nest) { article.appendChild(nest.content.cloneNode(true)); }
    var curves = row.getAttribute("data-curves");
    if (curves) {
      var charts = element("div", "charts");
      curves.split(" ").forEach(function (pair) {
        var parts = pair.split(":");
        charts.appendChild(chart(Number(parts[0]), Number(parts[1])));
      });
      article.appendChild(charts);
    }
    return article;
  }
  function setOpen(row, open) {
    var detail = detailOf(row);
    if (!open) {
      if (detail) { body.removeChild(detail); }
      row.classList.remove("open");
      return;
    }
    if (detail) { return; }
    detail = element("tr", "detail");
    detail.hidden = row.hidden;
    var cell = element("td");
    cell.colSpan = headers.length;
    cell.appendChild(renderDetails(row));
    detail.appendChild(cell);
    body.insertBefore(detail, row.nextSibling);
    row.classList.add("open");
  }
  body.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest("a.k") : null;
    if (!link) { return; }
    event.preventDefault();
    var row = link.closest("tr");
    setOpen(row, !detailOf(row));
  });
  // The full name on hover, set when first pointed at (names are long; the page holds each once).
  body.addEventListener("mouseover", function (event) {
    var cell = event.target.closest ? event.target.closest("td.name") : null;
    if (cell && !cell.title) { cell.title = cell.textContent; }
  });

  // ---- links: #k12 opens a row; #sort=-occupancy&filter=sm_90%20spills&open=all sets the table
  function openRow(id) {
    var row = document.getElementById(id);
    if (!row || row.parentNode !== body) { return; }
    if (row.hidden && filter) { filter.value = ""; applyFilter(); }
    setOpen(row, true);
    row.scrollIntoView({ block: "start" });
  }
  function applyHash() {
    var hash = window.location.hash.replace(/^#/, "");
    if (/^k\d+$/.test(hash)) { openRow(hash); return; }
    var target = hash && hash.indexOf("=") < 0 ? document.getElementById(hash) : null;
    if (target && target.tagName === "DETAILS") { target.open = true; }
    if (hash.indexOf("=") < 0) { return; }
    var open = [];
    hash.split("&").forEach(function (part) {
      var pair = part.split("=");
      var value = decodeURIComponent(pair.slice(1).join("="));
      if (pair[0] === "sort") {
        var descending = value.charAt(0) === "-", name = descending ? value.slice(1) : value;
        headers.forEach(function (th, column) { if (th.getAttribute("data-column") === name) { sortBy(column, descending); } });
      } else if (pair[0] === "filter" && filter) {
        filter.value = value;
      } else if (pair[0] === "open") {
        open = value.split(",");
      }
    });
    if (filter) { applyFilter(); }
    dataRows().forEach(function (row) {
      if (!row.hidden && (open.indexOf("all") >= 0 || open.indexOf(row.id) >= 0)) { setOpen(row, true); }
    });
    table.scrollIntoView({ block: "start" });
  }
  window.addEventListener("hashchange", applyHash);
  if (filter) { applyFilter(); }
  applyHash();
})();
