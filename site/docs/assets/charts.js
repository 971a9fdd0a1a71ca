/*
 * sinkbench charts: draw each chart's interactive Vega-Lite view over its static SVG. The project's own script;
 * Vega, Vega-Lite and Vega-Embed are vendored into the site (assets/vendor/vega-embed.js, loaded only by pages that
 * hold a chart), so nothing comes from the network.
 *
 * Markup it understands (written by the `figure` macro of site/templates/_macros.j2):
 *   <figure data-sb-chart>
 *     <div class="sb-chart" hidden></div>                     where the view is drawn
 *     <script type="application/json" class="sb-chart-spec">  the chart's Vega-Lite specification
 *     <img class="sb-chart-static" src="....svg">             the same specification rendered, shown until (and
 *                                                             unless) the view is drawn
 * Without JavaScript, or without the vendored script, the SVG stays. Hover a mark for its numbers; click a legend
 * entry to show one series (shift-click: several); the "..." menu saves the view as SVG or PNG. On the dark
 * palette the view takes Vega's dark theme.
 */
(function () {
  "use strict";

  function dark() {
    return document.body.getAttribute("data-md-color-scheme") === "slate";
  }

  function draw(figure) {
    var box = figure.querySelector(".sb-chart");
    var source = figure.querySelector("script.sb-chart-spec");
    if (!box || !source || !window.vegaEmbed) return;
    var spec;
    try { spec = JSON.parse(source.textContent); } catch (error) { return; }
    if (spec.width !== undefined && !spec.facet) {
      spec.width = "container";
      spec.autosize = { type: "fit-x", contains: "padding" };
    }
    var font = window.getComputedStyle(document.body).getPropertyValue("font-family");
    spec.config = Object.assign({}, spec.config || {}, { background: null, font: font || "sans-serif" });
    if (dark()) spec.config.text = { color: "#bdbdbd" }; /* the labels beside marks, light on the dark ground */
    box.hidden = false;
    window.vegaEmbed(box, spec, { actions: { export: true, source: false, compiled: false, editor: false },
                                  theme: dark() ? "dark" : undefined, renderer: "svg" }).then(function () {
      figure.classList.add("sb-figure--live");
    }, function () {
      box.hidden = true; /* the SVG stays */
    });
  }

  function init() {
    var figures = document.querySelectorAll("figure[data-sb-chart]");
    Array.prototype.forEach.call(figures, draw);
    /* The palette toggle changes the scheme in place: redraw so the text and lines suit it. */
    if (window.MutationObserver && figures.length) {
      new MutationObserver(function () { Array.prototype.forEach.call(figures, draw); })
        .observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
    }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
