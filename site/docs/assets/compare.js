/*
 * sinkbench Compare page: show the two chosen backbones or pairs side by side, from window.SB_COMPARE (written by
 * the build into assets/compare-data.js: every item's figures, already formatted, and its per-layer profile), and
 * draw both profiles with the vendored plotly.js. The choice is kept in the URL (?a=ID&b=ID).
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
        var figure = item.figures.filter(function (f) { return f[0] === label; })[0];
        row.appendChild(cell("td", figure ? figure[1] : "\u2013"));
      });
    });
  }

  function profile(box, chosen) {
    if (!window.Plotly || !box) return;
    var colours = ["#0072B2", "#E69F00"];
    var traces = chosen.filter(function (item) { return item.profile.length; }).map(function (item, index) {
      return {
        type: "scatter", mode: "lines+markers", name: item.label,
        x: item.profile.map(function (p) { return p[0]; }), y: item.profile.map(function (p) { return p[1]; }),
        line: { color: colours[index % 2], width: 2 },
        hovertemplate: "layer %{x}: median G %{y:.2f} nats<extra>" + item.label.replace(/</g, "&lt;") + "</extra>"
      };
    });
    var figure = box.closest("figure");
    if (figure) figure.hidden = !traces.length;
    if (!traces.length) return;
    var style = window.getComputedStyle(box);
    window.Plotly.react(box, traces, {
      height: 320, margin: { l: 10, r: 10, t: 10, b: 10 }, paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
      font: { color: style.color }, legend: { orientation: "h", y: 1.02, yanchor: "bottom", x: 0 },
      xaxis: { title: { text: "layer" }, automargin: true, gridcolor: "rgba(128,128,128,0.25)" },
      yaxis: { title: { text: "median G (nats)" }, automargin: true, gridcolor: "rgba(128,128,128,0.25)" }
    }, { responsive: true, displaylogo: false });
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
    function update(save) {
      var chosen = Array.prototype.map.call(picks, function (pick) { return found[pick.value]; }).filter(Boolean);
      render(table, chosen);
      profile(box, chosen);
      if (!save) return;
      try {
        var next = new URLSearchParams(window.location.search);
        Array.prototype.forEach.call(picks, function (pick) { next.set(pick.getAttribute("data-sb-compare-pick"), pick.value); });
        window.history.replaceState(null, "", window.location.pathname + "?" + next.toString());
      } catch (error) { /* opened from disk: the view still changes */ }
    }
    Array.prototype.forEach.call(picks, function (pick) { pick.addEventListener("change", function () { update(true); }); });
    update(false);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
