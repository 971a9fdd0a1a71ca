/*
 * sinkbench charts: draw each chart's interactive plotly.js figure over its static SVG. The project's own script;
 * plotly.js is vendored into the site (assets/vendor/plotly.min.js, loaded only by pages that hold a chart), so
 * nothing comes from the network.
 *
 * Markup it understands (written by the `figure` macro of site/templates/_macros.j2):
 *   <figure data-sb-chart>
 *     <div class="sb-chart" hidden></div>                     where the figure is drawn
 *     <script type="application/json" class="sb-chart-spec">  plotly's {"data": [...], "layout": {...}}
 *     <img class="sb-chart-static" src="....svg">             shown until (and unless) the figure is drawn
 * Without JavaScript, or without plotly.js, the SVG stays. Hover a point for its numbers; drag to zoom,
 * double-click to zoom out; click a legend entry to hide or show its series.
 */
(function () {
  "use strict";

  var CONFIG = {
    responsive: true,
    displaylogo: false,
    scrollZoom: false,
    modeBarButtonsToRemove: ["select2d", "lasso2d", "autoScale2d"],
    toImageButtonOptions: { format: "png", scale: 2 }
  };

  function colour(figure, property) {
    return window.getComputedStyle(figure).getPropertyValue(property).trim();
  }

  function draw(figure) {
    var box = figure.querySelector(".sb-chart");
    var source = figure.querySelector("script.sb-chart-spec");
    if (!box || !source || !window.Plotly) return;
    var spec;
    try { spec = JSON.parse(source.textContent); } catch (error) { return; }
    var layout = spec.layout || {};
    var text = colour(figure, "color") || "#333";
    layout.paper_bgcolor = "rgba(0,0,0,0)";
    layout.plot_bgcolor = "rgba(0,0,0,0)";
    layout.font = Object.assign({ family: colour(document.body, "font-family") }, layout.font || {}, { color: text });
    if (window.innerWidth < 600 && layout.height) layout.height = Math.min(layout.height, 360);
    ["xaxis", "yaxis"].forEach(function (axis) {
      layout[axis] = Object.assign({ gridcolor: "rgba(128,128,128,0.25)" }, layout[axis] || {});
    });
    box.hidden = false;
    window.Plotly.newPlot(box, spec.data || [], layout, CONFIG).then(function () {
      figure.classList.add("sb-figure--live");
    }, function () {
      box.hidden = true; /* the SVG stays */
    });
  }

  function init() {
    Array.prototype.forEach.call(document.querySelectorAll("figure[data-sb-chart]"), draw);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
