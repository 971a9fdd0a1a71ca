/*
 * sinkbench tables: sort a table by clicking a column header, filter its rows with a search box and
 * drop-downs. The project's own script, no dependencies, no network.
 *
 * Markup it understands (written by site/templates/_macros.j2):
 *   <table data-sb-table id="ID">            a sortable, filterable table
 *   <td data-sort="-9.6">                      value used for sorting (else the cell text)
 *   <tr data-sb-qk="none">                     a value a drop-down can filter on (key "qk")
 *   <input data-sb-filter="ID">                free-text filter over the row text
 *   <select data-sb-filter="ID" data-sb-key="qk">  exact-match filter on data-sb-qk ("" = all)
 *   <span data-sb-count="ID">                  receives "N of M rows"
 */
(function () {
  "use strict";

  function sortKey(row, index) {
    var cell = row.cells[index];
    var raw = cell ? (cell.getAttribute("data-sort") || cell.textContent).trim() : "";
    if (raw === "" || raw === "\u2013") return { empty: true };
    var number = Number(raw.replace("\u2212", "-"));
    return isNaN(number) ? { text: raw.toLowerCase() } : { number: number };
  }

  function compare(a, b) {
    if (a.empty || b.empty) return a.empty === b.empty ? 0 : a.empty ? 1 : -1;
    if ("number" in a && "number" in b) return a.number - b.number;
    var left = "number" in a ? String(a.number) : a.text;
    var right = "number" in b ? String(b.number) : b.text;
    return left.localeCompare(right);
  }

  function sortBy(table, header) {
    var headers = table.tHead.rows[0].cells;
    var index = Array.prototype.indexOf.call(headers, header);
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (x, y) {
      var a = sortKey(x, index), b = sortKey(y, index);
      if (a.empty || b.empty) return compare(a, b); /* blanks stay last both ways */
      return ascending ? compare(a, b) : compare(b, a);
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(headers, function (cell) { cell.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }

  function applyFilters(table) {
    var controls = document.querySelectorAll('[data-sb-filter="' + table.id + '"]');
    var rows = table.tBodies[0].rows, shown = 0;
    Array.prototype.forEach.call(rows, function (row) {
      var visible = Array.prototype.every.call(controls, function (control) {
        var value = control.value.trim().toLowerCase();
        if (value === "") return true;
        var key = control.getAttribute("data-sb-key");
        if (key) return (row.getAttribute("data-sb-" + key) || "").toLowerCase() === value;
        return row.textContent.toLowerCase().indexOf(value) !== -1;
      });
      row.hidden = !visible;
      if (visible) shown += 1;
    });
    var counter = document.querySelector('[data-sb-count="' + table.id + '"]');
    if (counter) counter.textContent = shown + " of " + rows.length + " rows";
  }

  function setUp(table) {
    if (!table.tHead || !table.tBodies.length) return;
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (header) {
      header.setAttribute("role", "columnheader");
      header.tabIndex = 0;
      header.title = "Sort by this column";
      header.addEventListener("click", function () { sortBy(table, header); });
      header.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") { event.preventDefault(); sortBy(table, header); }
      });
    });
    var controls = document.querySelectorAll('[data-sb-filter="' + table.id + '"]');
    Array.prototype.forEach.call(controls, function (control) {
      control.addEventListener("input", function () { applyFilters(table); });
      control.addEventListener("change", function () { applyFilters(table); });
    });
    applyFilters(table);
  }

  function init() {
    Array.prototype.forEach.call(document.querySelectorAll("table[data-sb-table]"), setUp);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
