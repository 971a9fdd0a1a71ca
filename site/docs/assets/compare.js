/*
 * sinkbench Compare page: show the two chosen backbones or pairs side by side, from window.SB_COMPARE (written by
 * the build into assets/compare-data.js: every item's figures, already formatted, each with its quantity and basis,
 * and its per-layer profile), say where the two stand on different bases, and draw both profiles as a Vega-Lite
 * chart with the vendored Vega-Embed. The choice is kept in the URL (?a=ID&b=ID).
 *
 * An item is {id, kind, label, url, figures: [[label, text, group, basis]], bases: [[text, key, note]], profile}; a
 * figure's basis indexes its item's bases (-1: none). The notice follows the rule of basis_notice in
 * sinkbench/leaderboard/compare.py: a quantity both show, whose two sets of basis keys differ.
 */
(function () {
  "use strict";

  function byId(items) {
    var found = {};
    items.forEach(function (item) { found[item.id] = item; });
    return found;
  }

  function cell(tag, text) {
    var element = document.createElement(tag);
    element.textContent = text;
    return element;
  }

  function link(item) {
    var header = document.createElement("th");
    var anchor = document.createElement("a");
    anchor.href = item.url;
    anchor.textContent = item.label;
    header.appendChild(anchor);
    var kind = cell("span", " (" + item.kind + ")");
    kind.className = "sb-muted";
    header.appendChild(kind);
    return header;
  }

  function figureCell(item, figure) {
    var td = cell("td", figure ? figure[1] : "\u2013");
    if (figure && figure[3] >= 0) {
      td.appendChild(document.createElement("br"));
      var basis = cell("span", item.bases[figure[3]][0]);
      basis.className = "sb-muted sb-basis";
      td.appendChild(basis);
    }
    return td;
  }

  function render(table, chosen) {
    var head = table.tHead.rows[0];
    while (head.cells.length > 1) head.deleteCell(1);
    chosen.forEach(function (item) { head.appendChild(link(item)); });
    var labels = [];
    chosen.forEach(function (item) {
      item.figures.forEach(function (figure) { if (labels.indexOf(figure[0]) === -1) labels.push(figure[0]); });
    });
    var body = table.tBodies[0];
    while (body.rows.length) body.deleteRow(0);
    labels.forEach(function (label) {
      var row = body.insertRow();
      var name = cell("td", label);
      name.className = "sb-sticky";
      row.appendChild(name);
      chosen.forEach(function (item) {
        row.appendChild(figureCell(item, item.figures.filter(function (f) { return f[0] === label; })[0]));
      });
    });
  }

  /* The basis keys of an item's figures of one quantity, each with the rows standing on it, in row order. */
  function bases(item, group) {
    var keys = [], rows = {};
    item.figures.forEach(function (figure) {
      if (figure[2] !== group || figure[3] < 0) return;
      var basis = item.bases[figure[3]], key = basis[1];
      if (!rows[key]) { rows[key] = []; keys.push(key); }
      var row = figure[0].indexOf(group + ": ") === 0 ? figure[0].slice(group.length + 2) : figure[0];
      rows[key].push(row + (basis[2] ? " (" + basis[2] + ")" : ""));
    });
    return keys.map(function (key) { return [key, rows[key]]; });
  }

  function said(found) {
    return found.map(function (entry) { return entry[1].join(", ") + " \u2014 " + entry[0]; }).join("; ");
  }

  function sameKeys(ours, theirs) {
    var mine = ours.map(function (entry) { return entry[0]; }).sort();
    var other = theirs.map(function (entry) { return entry[0]; }).sort();
    return mine.join("\n") === other.join("\n");
  }

  function notice(box, chosen) {
    if (!box) return;
    var list = box.querySelector("[data-sb-compare-notice-lines]");
    while (list.firstChild) list.removeChild(list.firstChild);
    if (chosen.length === 2) {
      var groups = [];
      chosen.forEach(function (item) {
        item.figures.forEach(function (f) { if (f[3] >= 0 && groups.indexOf(f[2]) === -1) groups.push(f[2]); });
      });
      groups.forEach(function (group) {
        var ours = bases(chosen[0], group), theirs = bases(chosen[1], group);
        if (!ours.length || !theirs.length || sameKeys(ours, theirs)) return;
        var line = document.createElement("li");
        line.appendChild(cell("strong", group));
        line.appendChild(document.createTextNode(". "));
        [[chosen[0], ours], [chosen[1], theirs]].forEach(function (side, index) {
          if (index) line.appendChild(document.createTextNode(" "));
          line.appendChild(cell("em", side[0].label));
          line.appendChild(document.createTextNode(": " + said(side[1]) + "."));
        });
        list.appendChild(line);
      });
    }
    box.hidden = !list.children.length;
  }

  function dark() {
    return document.body.getAttribute("data-md-color-scheme") === "slate";
  }

  function profile(box, chosen) {
    if (!window.vegaEmbed || !box) return;
    var drawn = chosen.map(function (item, index) { return [item, index]; }).filter(function (entry) {
      return entry[0].profile.length;
    });
    var figure = box.closest("figure");
    if (figure) figure.hidden = !drawn.length;
    var missing = figure && figure.querySelector("[data-sb-compare-missing]");
    if (missing) {
      var without = chosen.filter(function (item) { return !item.profile.length; });
      missing.textContent = without.length
        ? "No line for " + without.map(function (item) { return item.label; }).join(" and ") + ": no per-layer profile."
        : "";
    }
    if (!drawn.length) return;
    var names = drawn.map(function (entry) {
      return (entry[1] ? "second: " : "first: ") + entry[0].label + " (" + entry[0].kind + ")";
    });
    var rows = [];
    drawn.forEach(function (entry, index) {
      entry[0].profile.forEach(function (p) { rows.push({ who: names[index], layer: p[0], g: p[1] }); });
    });
    /* Okabe-Ito blue and vermilion, lighter on the dark palette; a dash and a shape each besides the colour. */
    var palette = dark() ? ["#56B4E9", "#F0A060"] : ["#0072B2", "#D55E00"];
    var who = { field: "who", type: "nominal", title: "Per-layer median G of:", sort: null };
    var spec = {
      $schema: "https://vega.github.io/schema/vega-lite/v6.json",
      width: "container", height: 300, data: { values: rows },
      config: { background: null, legend: { orient: "top", direction: "vertical" } },
      mark: { type: "line", point: true, strokeWidth: 2 },
      encoding: {
        x: { field: "layer", type: "quantitative", title: "layer", axis: { tickMinStep: 1 } },
        y: { field: "g", type: "quantitative", title: "median G (nats)" },
        color: Object.assign({ scale: { domain: names, range: palette } }, who),
        strokeDash: Object.assign({ scale: { domain: names, range: [[1, 0], [6, 3]] } }, who),
        shape: Object.assign({ scale: { domain: names, range: ["circle", "square"] } }, who),
        tooltip: [{ field: "who", title: "model" }, { field: "layer" },
                  { field: "g", title: "median G (nats)", format: ".2f" }]
      }
    };
    window.vegaEmbed(box, spec, { actions: false, theme: dark() ? "dark" : undefined, renderer: "svg" });
  }

  function init() {
    var items = window.SB_COMPARE || [];
    var table = document.getElementById("board-compare");
    var picks = document.querySelectorAll("[data-sb-compare-pick]");
    if (!items.length || !table || picks.length !== 2) return;
    var found = byId(items);
    var query = null;
    try { query = new URLSearchParams(window.location.search); } catch (error) { query = null; }
    Array.prototype.forEach.call(picks, function (pick) {
      var wanted = query && query.get(pick.getAttribute("data-sb-compare-pick"));
      if (wanted && found[wanted]) pick.value = wanted;
    });
    var box = document.getElementById("board-compare-profile");
    var warning = document.querySelector("[data-sb-compare-notice]");
    function chosen() {
      return Array.prototype.map.call(picks, function (pick) { return found[pick.value]; }).filter(Boolean);
    }
    function update(save) {
      render(table, chosen());
      notice(warning, chosen());
      profile(box, chosen());
      if (!save) return;
      try {
        var next = new URLSearchParams(window.location.search);
        Array.prototype.forEach.call(picks, function (pick) { next.set(pick.getAttribute("data-sb-compare-pick"), pick.value); });
        window.history.replaceState(null, "", window.location.pathname + "?" + next.toString());
      } catch (error) { /* opened from disk: the view still changes */ }
    }
    Array.prototype.forEach.call(picks, function (pick) { pick.addEventListener("change", function () { update(true); }); });
    /* The palette toggle changes the scheme in place: redraw so the text and lines suit it. */
    if (window.MutationObserver) {
      new MutationObserver(function () { profile(box, chosen()); })
        .observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
    }
    update(false);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
