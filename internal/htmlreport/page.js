// pgrehearse report: charts, sortable and filterable tables, row details,
// and a self-check (with #selfcheck in the URL) that a test reads back from
// the DOM. No framework, nothing fetched: the page works offline.
(function () {
  "use strict";
  var charts = [];

  function renderCharts() {
    var ids = Object.keys(window.PGREHEARSE_CHARTS || {});
    ids.forEach(function (id) {
      var el = document.getElementById(id);
      if (!el || typeof echarts === "undefined") return;
      var opt = window.PGREHEARSE_CHARTS[id];
      // A report is read, not watched: no animation, so what is drawn is
      // final at once (and in a headless browser's screenshot).
      opt.animation = false;
      var c = echarts.init(el, null, { renderer: "canvas" });
      c.setOption(opt);
      charts.push(c);
    });
    window.addEventListener("resize", function () { charts.forEach(function (c) { c.resize(); }); });
  }

  function cellValue(td, numeric) {
    if (!td) return numeric ? -Infinity : "";
    if (numeric) { var v = parseFloat(td.getAttribute("data-v")); return isNaN(v) ? -Infinity : v; }
    return td.textContent.toLowerCase();
  }

  function sortTable(table, col, dir) {
    var th = table.tHead.rows[0].cells[col];
    var numeric = th.classList.contains("num");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellValue(a.cells[col], numeric), y = cellValue(b.cells[col], numeric);
      var r = x < y ? -1 : x > y ? 1 : 0;
      if (r === 0) r = a.getAttribute("data-i") - b.getAttribute("data-i");
      return dir === "ascending" ? r : -r;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", dir);
  }

  function setupTables() {
    document.querySelectorAll("table.sortable").forEach(function (table) {
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
        th.addEventListener("click", function () {
          // Figures first sort largest first: the interesting end.
          var first = th.classList.contains("num") ? "descending" : "ascending";
          var cur = th.getAttribute("aria-sort");
          sortTable(table, col, cur === first ? (first === "ascending" ? "descending" : "ascending") : first);
        });
      });
    });
    document.querySelectorAll("input.filter").forEach(function (input) {
      var table = document.getElementById(input.getAttribute("data-table"));
      var count = document.getElementById(table.id + "-count");
      var apply = function () {
        var words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
        var shown = 0, rows = table.tBodies[0].rows;
        Array.prototype.forEach.call(rows, function (r) {
          var text = r.textContent.toLowerCase();
          var ok = words.every(function (w) { return text.indexOf(w) >= 0; });
          r.hidden = !ok;
          if (ok) shown++;
        });
        if (count) count.textContent = shown + " of " + rows.length + " rows";
      };
      input.addEventListener("input", apply);
      apply();
    });
    document.querySelectorAll("tr.clickable").forEach(function (tr) {
      tr.addEventListener("click", function () {
        var table = tr.closest("table");
        var panel = document.getElementById(table.id + "-detail");
        var src = document.getElementById(tr.getAttribute("data-detail"));
        var was = tr.classList.contains("selected");
        table.querySelectorAll("tr.selected").forEach(function (r) { r.classList.remove("selected"); });
        if (was) { panel.hidden = true; return; }
        tr.classList.add("selected");
        panel.innerHTML = src.innerHTML;
        panel.hidden = false;
      });
    });
  }

  // canvasInk counts the non-transparent pixels of a chart's canvases.
  function canvasInk(el) {
    var ink = 0;
    el.querySelectorAll("canvas").forEach(function (cv) {
      try {
        var d = cv.getContext("2d").getImageData(0, 0, cv.width, cv.height).data;
        for (var i = 3; i < d.length; i += 4) if (d[i] !== 0) ink++;
      } catch (e) { /* a tainted canvas counts as empty */ }
    });
    return ink;
  }

  function isSorted(table, col, dir) {
    var numeric = table.tHead.rows[0].cells[col].classList.contains("num");
    var vals = Array.prototype.map.call(table.tBodies[0].rows, function (r) { return cellValue(r.cells[col], numeric); });
    for (var i = 1; i < vals.length; i++) {
      if (dir === "ascending" ? vals[i - 1] > vals[i] : vals[i - 1] < vals[i]) return false;
    }
    return true;
  }

  function selfCheck() {
    var out = { library: typeof echarts !== "undefined" ? echarts.version : null, charts: [], tables: [], errors: [] };
    Object.keys(window.PGREHEARSE_CHARTS || {}).forEach(function (id) {
      var el = document.getElementById(id);
      out.charts.push({ id: id, canvases: el ? el.querySelectorAll("canvas").length : 0, svg: el ? el.querySelectorAll("svg *").length : 0, ink: el ? canvasInk(el) : 0 });
    });
    out.charts_rendered = out.charts.filter(function (c) { return c.ink > 0 || c.svg > 0; }).length;
    document.querySelectorAll("table.sortable").forEach(function (table) {
      var t = { id: table.id, rows: table.tBodies[0].rows.length, checks: [] };
      var heads = table.tHead.rows[0].cells;
      for (var col = 0; col < heads.length; col++) {
        heads[col].click();
        var d1 = heads[col].getAttribute("aria-sort");
        var ok1 = isSorted(table, col, d1);
        var shown = Array.prototype.map.call(table.tBodies[0].rows, function (r) { return r.cells[col] ? r.cells[col].textContent : ""; });
        heads[col].click();
        var d2 = heads[col].getAttribute("aria-sort");
        var ok2 = isSorted(table, col, d2) && d1 !== d2;
        t.checks.push({ col: col, label: heads[col].textContent, first: d1, ok: ok1 && ok2, values: shown });
      }
      // Back to the page's own order.
      var body = table.tBodies[0];
      Array.prototype.slice.call(body.rows).sort(function (a, b) { return a.getAttribute("data-i") - b.getAttribute("data-i"); })
        .forEach(function (r) { body.appendChild(r); });
      Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
      t.sorted_ok = t.checks.every(function (c) { return c.ok; });
      // Filter on the first row's second cell: it must stay, and the
      // count must drop unless every row matches.
      var input = document.querySelector('input.filter[data-table="' + table.id + '"]');
      if (input && t.rows > 0) {
        var first = body.rows[0], word = first.cells[Math.min(1, first.cells.length - 1)].textContent.trim();
        input.value = word;
        input.dispatchEvent(new Event("input"));
        t.filter = { word: word, shown: Array.prototype.filter.call(body.rows, function (r) { return !r.hidden; }).length, first_shown: !first.hidden };
        input.value = "";
        input.dispatchEvent(new Event("input"));
      }
      // A click on a row with a detail shows it.
      var row = body.querySelector("tr.clickable");
      if (row) {
        row.click();
        var panel = document.getElementById(table.id + "-detail");
        t.detail_shown = !panel.hidden && panel.textContent.length > 0;
        row.click();
      }
      out.tables.push(t);
    });
    // What overflows sideways: the page itself, and each table's box.
    out.viewport_width = window.innerWidth;
    out.page_width = document.documentElement.scrollWidth;
    out.overflows = [];
    document.querySelectorAll(".scroll").forEach(function (box) {
      if (box.scrollWidth > box.clientWidth + 1) {
        var t = box.querySelector("table");
        out.overflows.push({ table: t ? t.id : "", scroll_width: box.scrollWidth, client_width: box.clientWidth });
      }
    });
    var pre = document.getElementById("selfcheck");
    pre.textContent = JSON.stringify(out);
    pre.setAttribute("data-done", "1");
  }

  function start() {
    try { renderCharts(); } catch (e) { window.__chartError = String(e); }
    setupTables();
    if (location.hash === "#selfcheck") {
      try { selfCheck(); } catch (e) {
        var pre = document.getElementById("selfcheck");
        pre.textContent = JSON.stringify({ errors: [String(e)], chart_error: window.__chartError || null });
      }
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})();
