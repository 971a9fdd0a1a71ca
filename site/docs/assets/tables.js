/*
 * sinkbench tables: sort a table by clicking a column header, filter the rows of every table of a page with one
 * set of controls, show or hide columns, and keep all of it in the page's URL (so a filtered, sorted view can be
 * bookmarked and shared). The project's own script, no dependencies, no network.
 *
 * Markup it understands (written by site/templates/_macros.j2):
 *   <table data-sb-table id="ID">                a sortable table; it gets a "Columns" menu
 *   <td data-sort="-9.6">                          value used for sorting (else the cell text)
 *   <tr data-sb-qk="none">                         a value a drop-down can filter on (key "qk")
 *   <input data-sb-filter="ID1 ID2">               free-text filter over the rows of the listed tables
 *   <select data-sb-filter="ID1 ID2" data-sb-key="qk">  exact-match filter on data-sb-qk ("" = all)
 *   <span data-sb-count="ID">                      receives "N of M rows" of that table
 *   <th data-sb-default-hidden>                   a column hidden until shown from the menu
 * URL: ?q=TEXT&qk=VALUE (one key per drop-down), sort=ID:COLUMN:asc|desc, hide=ID:COLUMN,... (every hidden
 * column, once the reader changed one; without it, the page's default).
 */
(function () {
  "use strict";

  var each = function (list, visit) { Array.prototype.forEach.call(list, visit); };

  function params() {
    try { return new URLSearchParams(window.location.search); } catch (error) { return null; }
  }

  function saveParam(name, value) {
    var found = params();
    if (!found) return;
    if (value) found.set(name, value); else found.delete(name);
    var query = found.toString();
    try {
      window.history.replaceState(null, "", window.location.pathname + (query ? "?" + query : "") + window.location.hash);
    } catch (error) { /* a page opened from disk may refuse: the view still works, unsaved */ }
  }

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

  function sortBy(table, index, ascending, remember) {
    var headers = table.tHead.rows[0].cells;
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (x, y) {
      var a = sortKey(x, index), b = sortKey(y, index);
      if (a.empty || b.empty) return compare(a, b); /* blanks stay last both ways */
      return ascending ? compare(a, b) : compare(b, a);
    });
    rows.forEach(function (row) { body.appendChild(row); });
    each(headers, function (cell) { cell.removeAttribute("aria-sort"); });
    headers[index].setAttribute("aria-sort", ascending ? "ascending" : "descending");
    if (remember) saveParam("sort", table.id + ":" + index + ":" + (ascending ? "asc" : "desc"));
  }

  function controlsOf(table) {
    return Array.prototype.filter.call(document.querySelectorAll("[data-sb-filter]"), function (control) {
      return control.getAttribute("data-sb-filter").split(/\s+/).indexOf(table.id) !== -1;
    });
  }

  function applyFilters(table) {
    var controls = controlsOf(table);
    var rows = table.tBodies[0].rows, shown = 0;
    each(rows, function (row) {
      var visible = controls.every(function (control) {
        var value = control.value.trim().toLowerCase();
        if (value === "") return true;
        var key = control.getAttribute("data-sb-key");
        if (key) return (row.getAttribute("data-sb-" + key) || "").toLowerCase() === value;
        return row.textContent.toLowerCase().indexOf(value) !== -1;
      });
      row.hidden = !visible;
      if (visible) shown += 1;
    });
    each(document.querySelectorAll('[data-sb-count="' + table.id + '"]'), function (counter) {
      counter.textContent = shown + " of " + rows.length + " rows";
    });
  }

  function setColumn(table, index, visible) {
    var wide = table.tHead.rows[0].cells[index].classList.contains("sb-wide");
    each(table.rows, function (row) {
      var cell = row.cells[index];
      if (!cell) return;
      cell.classList.toggle("sb-col-hidden", !visible);
      cell.classList.toggle("sb-col-shown", visible && wide);
    });
  }

  function hiddenColumns() {
    var found = params(), hidden = {};
    if (!found || !found.has("hide")) { /* no choice in the URL: the columns the page hides by default */
      each(document.querySelectorAll("table[data-sb-table]"), function (table) {
        each(table.tHead ? table.tHead.rows[0].cells : [], function (cell, index) {
          if (cell.hasAttribute("data-sb-default-hidden")) (hidden[table.id] = hidden[table.id] || []).push(index);
        });
      });
      return hidden;
    }
    found.get("hide").split(",").forEach(function (item) {
      var parts = item.split(":");
      if (parts.length === 2) (hidden[parts[0]] = hidden[parts[0]] || []).push(Number(parts[1]));
    });
    return hidden;
  }

  function saveHidden() {
    var items = [];
    each(document.querySelectorAll("table[data-sb-table]"), function (table) {
      each(table.tHead.rows[0].cells, function (cell, index) {
        if (cell.classList.contains("sb-col-hidden")) items.push(table.id + ":" + index);
      });
    });
    saveParam("hide", items.join(",") || "none"); /* "none": every column shown, by choice */
  }

  function columnMenu(table, hidden) {
    var menu = document.createElement("details");
    menu.className = "sb-columns";
    var summary = document.createElement("summary");
    summary.textContent = "Columns";
    menu.appendChild(summary);
    each(table.tHead.rows[0].cells, function (header, index) {
      if (index === 0) return; /* the row's name always stays */
      var label = document.createElement("label");
      var box = document.createElement("input");
      box.type = "checkbox";
      box.checked = (hidden[table.id] || []).indexOf(index) === -1;
      if (!box.checked) setColumn(table, index, false);
      box.addEventListener("change", function () { setColumn(table, index, box.checked); saveHidden(); });
      label.appendChild(box);
      label.appendChild(document.createTextNode(" " + header.textContent.trim()));
      menu.appendChild(label);
    });
    table.parentNode.insertBefore(menu, table);
  }

  function setUp(table, hidden) {
    if (!table.tHead || !table.tBodies.length || !table.id) return;
    each(table.tHead.rows[0].cells, function (header, index) {
      header.setAttribute("role", "columnheader");
      header.tabIndex = 0;
      var toggle = function () { sortBy(table, index, header.getAttribute("aria-sort") !== "ascending", true); };
      header.addEventListener("click", toggle);
      header.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") { event.preventDefault(); toggle(); }
      });
    });
    columnMenu(table, hidden);
  }

  function restore(found) {
    each(document.querySelectorAll("[data-sb-filter]"), function (control) {
      var value = found && found.get(control.getAttribute("data-sb-key") || "q");
      if (value) control.value = value;
      var name = control.getAttribute("data-sb-key") || "q";
      var changed = function () {
        saveParam(name, control.value.trim());
        control.getAttribute("data-sb-filter").split(/\s+/).forEach(function (id) {
          var table = document.getElementById(id);
          if (table) applyFilters(table);
        });
      };
      control.addEventListener("input", changed);
      control.addEventListener("change", changed);
    });
    var sort = ((found && found.get("sort")) || "").split(":");
    var table = sort.length === 3 ? document.getElementById(sort[0]) : null;
    if (table && table.tHead && table.tHead.rows[0].cells[Number(sort[1])]) sortBy(table, Number(sort[1]), sort[2] === "asc", false);
  }

  function init() {
    var hidden = hiddenColumns();
    var tables = document.querySelectorAll("table[data-sb-table]");
    each(tables, function (table) { setUp(table, hidden); });
    restore(params());
    each(tables, applyFilters);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
