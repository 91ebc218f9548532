// Builds ../plotly/plotly-scatter-bar-heatmap.min.js from index.js as plotly.js 4.1.1 builds its dist bundles: the
// settings of its esbuild-config.js, its build's stripping of attribute descriptions, its UMD wrapper and licence
// header (its tasks/ folder, where its own partial-bundle task lives, is not in the npm package). `make plotly`.
// Rebuilt from package-lock.json it is byte-identical but for ~120 bytes: the CSS plugin hashes this folder's
// absolute path into a style id.
import fs from "node:fs";
import { createRequire } from "node:module";
import { build } from "esbuild";
import { environmentPlugin } from "esbuild-plugin-environment";
import { glsl } from "esbuild-plugin-glsl";

const require = createRequire(import.meta.url);
const inlineCss = require("esbuild-plugin-inline-css");
const { version } = require("plotly.js/package.json");
const outfile = new URL("../plotly/plotly-scatter-bar-heatmap.min.js", import.meta.url).pathname;

// Attribute metadata only plotly.js's schema documentation reads
const meta = [
  "description: '.*'",
  "description: \\[[\\s\\S]*?\\]\\.join\\([\\s\\S]*?\\)",
  "requiredOpts: \\[[\\s\\S]*?\\]",
  "otherOpts: \\[[\\s\\S]*?\\]",
  "role: '.*'",
  "hrName: '.*'",
].map((pattern) => new RegExp(`\\s*${pattern},?`, "g"));
const stripMeta = {
  name: "strip-meta-attributes",
  setup(builder) {
    builder.onLoad({ filter: /\.js$/ }, async ({ path }) => {
      let contents = await fs.promises.readFile(path, "utf-8");
      for (const pattern of meta) contents = contents.replace(pattern, "");
      return { contents, loader: "js" };
    });
  },
};

await build({
  entryPoints: [new URL("index.js", import.meta.url).pathname],
  outfile,
  format: "iife",
  globalName: "Plotly",
  bundle: true,
  minify: true,
  plugins: [inlineCss(), glsl({ minify: true }), environmentPlugin({ NODE_DEBUG: false }), stripMeta],
  alias: { regl: "@plotly/regl", stream: "stream-browserify" },
  define: { global: "window", "define.amd": "false" },
  target: "es2016",
  logLevel: "info",
});

const header = `/**
* plotly.js (scatter, bar, heatmap - minified) v${version}
* Copyright 2012-2026, Plotly, Inc.
* All rights reserved.
* Licensed under the MIT license
*/
(
 function(root, factory) {
  if (typeof module === "object" && module.exports) {
   module.exports = factory();
  } else {
   root.moduleName = factory();
  }
} (typeof self !== "undefined" ? self : this, () => {
`;
const footer = "\nwindow.Plotly = Plotly;\nreturn Plotly;\n}));";
fs.writeFileSync(outfile, header + fs.readFileSync(outfile, "utf-8") + footer);
