// plotly.js's core (which registers scatter) and the two other traces the explorer's charts use. A trace type missing
// here is drawn as nothing: tests/browser/test_first_visit.py checks every page's charts against this list.
"use strict";

var Plotly = require("plotly.js/lib/core");

Plotly.register([require("plotly.js/lib/bar"), require("plotly.js/lib/heatmap")]);

module.exports = Plotly;
