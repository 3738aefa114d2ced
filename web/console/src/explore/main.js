// The explorer: search for a node, see it and its neighbours as a graph
// (cytoscape.js), click a node to expand it and read its properties, and
// follow the change log live, so a node an agent changes re-renders. Every
// read goes through /graphql: queries over POST, the change feed as a
// `changes` subscription over a WebSocket.
//
// It opens on the node that `?id=` or `#id` names; without one, on the
// best-connected of a few suggested nodes (a handful of small queries,
// never a scan of the graph), and lists the suggestions to start from.

import cytoscape from 'cytoscape';
import { createClient } from 'graphql-ws';
import './explore.css';

const config = JSON.parse(document.getElementById('explore-config').textContent);
const endpoint = new URL(config.endpoint, location.href);
const wsURL = new URL(endpoint);
wsURL.protocol = endpoint.protocol === 'https:' ? 'wss:' : 'ws:';

const $ = (id) => document.getElementById(id);
const graphEl = $('graph');
const detailsEl = $('details');
const hitsEl = $('hits');
const statusEl = $('status');
const liveEl = $('live');
const stageEl = $('stage');
const legendEl = $('legend');
const edgeFilterEl = $('edge-filter');
const tipEl = $('tip');
const suggestEl = $('suggest');
const suggestionsEl = $('suggestions');

const NODE = `fragment N on Node { id type revision updatedAt properties }`;
const SEARCH = `query Search($q: String!) {
  searchNodes(query: $q, limit: 20) { hits { node { id type properties } } truncated }
}`;
const EXPAND = `query Expand($id: String!) {
  getNode(id: $id) { node { ...N edgeCounts { label direction count } } }
  neighbors(id: $id, limit: 60) { nodes { node { ...N } } edges { from label to key } truncated }
} ${NODE}`;
const START = `query Start {
  describeModel { nodeTypes { name display count } edgeLabels { name from to count } }
  resource(uri: "lore://changes") { json }
}`;
// The first few nodes of each of the four best-connected types (a type
// may repeat when the model has fewer).
const SUGGEST = `query Suggest($t0: String!, $t1: String!, $t2: String!, $t3: String!) {
  s0: queryGraph(from: {type: $t0}, limit: 5) { nodes }
  s1: queryGraph(from: {type: $t1}, limit: 5) { nodes }
  s2: queryGraph(from: {type: $t2}, limit: 5) { nodes }
  s3: queryGraph(from: {type: $t3}, limit: 5) { nodes }
}`;
// The edge counts of up to five candidates for the opening node.
const DEGREES = `query Degrees($d0: String!, $d1: String!, $d2: String!, $d3: String!, $d4: String!) {
  d0: getNode(id: $d0) { node { id edgeCounts { count } } }
  d1: getNode(id: $d1) { node { id edgeCounts { count } } }
  d2: getNode(id: $d2) { node { id edgeCounts { count } } }
  d3: getNode(id: $d3) { node { id edgeCounts { count } } }
  d4: getNode(id: $d4) { node { id edgeCounts { count } } }
}`;
const FOLLOW = `subscription Follow($since: Int) {
  changes(since: $since) { seq op nodes { id action } edges { from label to key action } }
}`;

// ---- GraphQL over HTTP ----

// gql runs one operation and returns its data, or throws its errors.
async function gql(query, variables) {
  const { data, errors } = await post(query, variables);
  if (errors?.length) throw new Error(errors.map((e) => e.message).join('; '));
  return data;
}

async function post(query, variables) {
  const res = await fetch(endpoint, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  let body;
  try {
    body = await res.json();
  } catch {
    throw new Error(`${endpoint.pathname}: ${res.status} ${res.statusText}`);
  }
  return body;
}

// ---- How nodes look ----

const palette = ['#3b6fb6', '#c2573a', '#3a8f5c', '#8c5bb5', '#b48a1d', '#2a8c95', '#b0477a', '#6b7a3a', '#5a6270'];
const types = new Map(); // type name → {display, color}

function typeInfo(type) {
  if (!types.has(type)) types.set(type, { display: 'name', color: palette[types.size % palette.length] });
  return types.get(type);
}

// label is what the model names the type's display property, else a
// name or title, else the ID.
function label(n) {
  const p = n.properties ?? {};
  const v = p[typeInfo(n.type).display] ?? p.name ?? p.title;
  return typeof v === 'string' && v !== '' ? v : n.id;
}

function css(name, fallback) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

// ---- The graph ----

// Text sizes in screen pixels: labels keep this size while the graph is
// zoomed out down to minLabelZoom, then shrink with it, and cytoscape
// skips any that would be drawn smaller than minFontPx.
const nodeFontPx = 13;
const edgeFontPx = 12;
const labelWidthPx = 170;
const minLabelZoom = 0.3;
const minFontPx = 7;
// How much labels are enlarged (in graph units) against the zoom.
let labelScale = 1;
let labelWidth = labelWidthPx;

// styles is the graph's stylesheet for labels enlarged k times in graph
// units (see scaleLabels).
const styles = (k, labelWidth = labelWidthPx) => [
  {
    selector: 'node',
    style: {
      'background-color': 'data(color)',
      label: 'data(label)',
      color: css('--fg', '#1d2127'),
      'font-size': nodeFontPx * k,
      'font-family': 'system-ui, sans-serif',
      'min-zoomed-font-size': minFontPx,
      'text-valign': 'bottom',
      'text-margin-y': 4,
      'text-wrap': 'ellipsis',
      'text-max-width': labelWidth * k,
      'text-background-color': css('--bg', '#fbfbfa'),
      'text-background-opacity': 0.75,
      'text-background-padding': 1,
      width: 22 * Math.sqrt(k),
      height: 22 * Math.sqrt(k),
    },
  },
  { selector: 'node.expanded', style: { width: 30 * Math.sqrt(k), height: 30 * Math.sqrt(k), 'border-width': 3, 'border-color': css('--fg', '#1d2127') } },
  // The hovered or selected node shows its whole label, above the others.
  { selector: 'node.hover, node:selected', style: { 'text-wrap': 'wrap', 'text-max-width': 2 * labelWidth * k, 'z-index': 10, 'text-background-opacity': 0.95 } },
  { selector: 'node:selected', style: { 'overlay-color': css('--accent', '#2f62a8'), 'overlay-opacity': 0.25, 'overlay-padding': 6 } },
  { selector: 'node.changed', style: { 'underlay-color': '#f5b700', 'underlay-opacity': 0.8, 'underlay-padding': 8 } },
  {
    selector: 'edge',
    style: {
      width: 1.5,
      'line-color': css('--muted', '#8a939c'),
      'target-arrow-color': css('--muted', '#8a939c'),
      'target-arrow-shape': 'triangle',
      'curve-style': 'bezier',
      label: 'data(label)',
      'font-size': edgeFontPx * k,
      'font-family': 'system-ui, sans-serif',
      'min-zoomed-font-size': minFontPx,
      color: css('--muted', '#5d6670'),
      // Horizontal: rotated text along steep edges was hard to read.
      'text-rotation': 'none',
      'text-background-color': css('--bg', '#fbfbfa'),
      'text-background-opacity': 0.9,
      'text-background-padding': 2,
      'text-background-shape': 'roundrectangle',
    },
  },
  { selector: 'edge.unlabelled', style: { label: '' } },
  { selector: 'edge.filtered', style: { display: 'none' } },
];

const cy = cytoscape({
  container: graphEl,
  wheelSensitivity: 0.3,
  maxZoom: 3,
  style: styles(1),
});
// For the browser's console and the browser test, which clicks nodes on
// the canvas where cytoscape drew them.
globalThis.loreExplorer = { cy };

// Keep labels legible when a fit zooms out: font sizes are in graph units,
// so they grow as the zoom shrinks, down to minLabelZoom.
// On a narrow graph labels are shortened sooner. It reports whether the
// labels changed size.
function scaleLabels(zoom = cy.zoom()) {
  const k = 1 / Math.max(Math.min(zoom, 1), minLabelZoom);
  const w = Math.round(Math.min(labelWidthPx, Math.max(80, graphEl.clientWidth / 3.5)));
  if (k === labelScale && w === labelWidth) return false;
  labelScale = k;
  labelWidth = w;
  cy.style(styles(k, w));
  return true;
}
let zoomFrame = 0;
cy.on('zoom', () => {
  if (zoomFrame) return;
  zoomFrame = requestAnimationFrame(() => {
    zoomFrame = 0;
    scaleLabels();
  });
});

const edgeID = (e) => `${e.label}(${e.from},${e.to}${e.key ? ',' + e.key : ''})`;

function nodeData(n) {
  const { color } = typeInfo(n.type);
  return { id: n.id, label: label(n), type: n.type, color, node: n };
}

// put adds or refreshes nodes and edges. New nodes start on an arc
// around `around`, facing away from what is drawn already, so the layout
// that follows starts near its answer and the picture stays recognisable.
function put(nodes, edges, around) {
  const fresh = nodes.filter((n) => cy.getElementById(n.id).empty());
  const center = around ? cy.getElementById(around).position() : { x: 0, y: 0 };
  const rest = cy.nodes().filter((n) => n.id() !== around);
  let facing = 0;
  let spread = 2 * Math.PI;
  if (around && rest.length > 0) {
    const bb = rest.boundingBox();
    facing = Math.atan2(center.y - (bb.y1 + bb.y2) / 2, center.x - (bb.x1 + bb.x2) / 2);
    spread = Math.PI * 1.2;
  }
  const r = 110 + 5 * fresh.length;
  cy.batch(() => {
    fresh.forEach((n, i) => {
      const a = facing - spread / 2 + (spread * (i + 0.5)) / fresh.length;
      cy.add({ group: 'nodes', data: nodeData(n), position: { x: center.x + r * Math.cos(a), y: center.y + r * Math.sin(a) } });
    });
    for (const n of nodes) cy.getElementById(n.id).data(nodeData(n));
    for (const e of edges) {
      const id = edgeID(e);
      if (cy.getElementById(id).empty() && !cy.getElementById(e.from).empty() && !cy.getElementById(e.to).empty()) {
        const added = cy.add({ group: 'edges', data: { id, source: e.from, target: e.to, label: e.label } });
        if (hiddenLabels.has(e.label)) added.addClass('filtered');
        if (!showEdgeText) added.addClass('unlabelled');
      }
    }
  });
  return fresh.length;
}

// ring draws one node in the middle and the rest on rings around it by
// their distance from it, each ring grouped by type: every edge at that
// node (and its label) has room, whatever was drawn before.
function ring(center) {
  const depth = new Map();
  cy.elements().breadthFirstSearch({ root: cy.getElementById(center), visit: (v, _e, _u, _i, d) => void depth.set(v.id(), d) });
  const far = Math.max(0, ...depth.values()) + 1;
  const order = cy.nodes().sort((a, b) => a.data('type').localeCompare(b.data('type')) || a.data('label').localeCompare(b.data('label')));
  // Lay out with the labels at their size at zoom 1, so what was drawn
  // zoomed out does not push the rings apart.
  scaleLabels(1);
  return new Promise((resolve) => {
    const l = order.layout({
      name: 'concentric',
      animate: false,
      fit: false,
      concentric: (n) => far - (depth.get(n.id()) ?? far),
      levelWidth: () => 1,
      minNodeSpacing: 40,
      spacingFactor: 1.1,
      avoidOverlap: true,
      nodeDimensionsIncludeLabels: true,
      startAngle: -Math.PI / 2,
    });
    l.one('layoutstop', () => {
      stretch(center);
      resolve();
    });
    l.run();
  });
}

// stretch turns the rings into ellipses the shape of a tall graph (a
// phone held upright), which gives the nodes and labels more room.
function stretch(center) {
  const aspect = Math.min(graphEl.clientHeight / Math.max(graphEl.clientWidth, 1), 1.8);
  if (aspect < 1.05) return;
  const c = cy.getElementById(center).position();
  cy.nodes().positions((n) => {
    const p = n.position();
    return { x: p.x, y: c.y + (p.y - c.y) * aspect };
  });
}

// fit frames everything drawn, with room for labels; on a small screen
// less room, so the nodes keep a usable size.
function fit() {
  const pad = Math.min(40, Math.round(Math.min(graphEl.clientWidth, graphEl.clientHeight) / 12));
  // Labels are sized against the zoom, and the fit counts them: a few
  // rounds settle both.
  for (let i = 0; i < 3; i++) {
    cy.fit(cy.elements(':visible'), pad);
    if (!scaleLabels()) break;
  }
}

// The canvas follows its box: when the window (or the layout around the
// graph) changes size, cytoscape resizes and the drawing is fitted again.
// data-fitted counts the fits and data-width records the width fitted,
// for the browser test.
let resizeFrame = 0;
new ResizeObserver(() => {
  cancelAnimationFrame(resizeFrame);
  resizeFrame = requestAnimationFrame(() => {
    cy.resize();
    if (cy.nodes().length) fit();
    graphEl.dataset.width = String(graphEl.clientWidth);
    graphEl.dataset.fitted = String(+(graphEl.dataset.fitted ?? 0) + 1);
  });
}).observe(graphEl);

// counts mirrors the graph's size into attributes others can wait on,
// and marks the legend's types that are drawn.
function counts() {
  graphEl.dataset.nodes = cy.nodes().length;
  graphEl.dataset.edges = cy.edges().length;
  for (const li of legendEl.children) {
    li.classList.toggle('drawn', cy.nodes().some((n) => n.data('type') === li.dataset.type));
  }
  for (const label of edgeFilterEl.querySelectorAll('label[data-label]')) {
    const n = cy.edges().filter((e) => e.data('label') === label.dataset.label).length;
    label.querySelector('.n').textContent = n ? String(n) : '';
  }
}

// Each expand takes a number; only the newest one draws its answer, so a
// slow answer (the opening node's, say) cannot replace a later choice.
let expanding = 0;

// expand draws a node with every neighbour and edge at it.
async function expand(id, { fresh = false, why = '' } = {}) {
  const mine = ++expanding;
  busy(`Loading ${id}…`);
  try {
    const data = await gql(EXPAND, { id });
    if (mine !== expanding) return;
    const n = data.getNode.node;
    if (fresh) cy.elements().remove();
    put([n], [], null);
    const added = put(
      data.neighbors.nodes.map((x) => x.node),
      data.neighbors.edges ?? [],
      id,
    );
    cy.getElementById(id).addClass('expanded');
    if (fresh || added > 0) {
      await ring(id);
      if (mine !== expanding) return;
      fit();
    }
    counts();
    select(id, n);
    done(
      (why ? why + ': ' : '') +
        `${n.id}: ${data.neighbors.nodes.length} neighbours` +
        (data.neighbors.truncated ? ' (more exist; the first 60 are shown)' : '') +
        ` · ${cy.nodes().length} nodes, ${cy.edges().length} edges shown`,
    );
  } catch (err) {
    if (mine === expanding) fail(err);
  }
}

// linkPath is the explorer's address for a node: ?id=, with the slashes
// of IDs left readable.
function linkPath(id) {
  return location.pathname + '?id=' + encodeURIComponent(id).replaceAll('%2F', '/');
}

function select(id, node) {
  cy.nodes(':selected').unselect();
  const shown = cy.getElementById(id);
  shown.select();
  if (linked() !== id || location.hash) history.replaceState(null, '', linkPath(id));
  showDetails(node ?? shown.data('node'));
  // Keep the selection on screen (keyboard moves can leave the view).
  const p = shown.renderedPosition();
  if (p && (p.x < 0 || p.y < 0 || p.x > graphEl.clientWidth || p.y > graphEl.clientHeight)) cy.center(shown);
}

cy.on('tap', 'node', (e) => {
  const id = e.target.id();
  if (e.target.hasClass('expanded')) select(id);
  else expand(id);
});

// ---- Full labels on hover ----

cy.on('mouseover', 'node', (e) => {
  const n = e.target;
  n.addClass('hover');
  const p = n.renderedPosition();
  tipEl.replaceChildren(el('strong', {}, n.data('label')), el('span', {}, `${n.data('type')} · ${n.id()}`));
  tipEl.hidden = false;
  // Above the node (below when there is no room), clear of its own label,
  // inside the stage.
  const box = graphEl.getBoundingClientRect();
  const stage = stageEl.getBoundingClientRect();
  const x = Math.min(box.left - stage.left + p.x + 12, stage.width - tipEl.offsetWidth - 4);
  const above = box.top - stage.top + p.y - tipEl.offsetHeight - 16;
  tipEl.style.left = `${Math.max(4, x)}px`;
  tipEl.style.top = `${above >= box.top - stage.top ? above : box.top - stage.top + p.y + 34}px`;
  graphEl.title = n.data('label');
});
function unhover() {
  cy.nodes('.hover').removeClass('hover');
  tipEl.hidden = true;
  graphEl.removeAttribute('title');
}
cy.on('mouseout', 'node', unhover);
graphEl.addEventListener('mouseleave', unhover);
cy.on('pan zoom', () => {
  tipEl.hidden = true;
});

// ---- Keyboard ----

// nearest is the drawn node closest to `from` in the direction (dx, dy),
// within 60° of it; distance off the axis counts double.
function nearest(from, dx, dy) {
  const p = from.position();
  let best = null;
  let bestScore = Infinity;
  cy.nodes(':visible').forEach((n) => {
    if (n === from) return;
    const q = n.position();
    const vx = q.x - p.x;
    const vy = q.y - p.y;
    const along = vx * dx + vy * dy;
    const across = Math.abs(vx * dy - vy * dx);
    if (along <= 0 || across > along * Math.tan(Math.PI / 3)) return;
    const score = along + 2 * across;
    if (score < bestScore) {
      best = n;
      bestScore = score;
    }
  });
  return best;
}

const arrows = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };

graphEl.addEventListener('keydown', (e) => {
  if (e.altKey || e.ctrlKey || e.metaKey) return;
  const current = cy.nodes(':selected').first();
  if (arrows[e.key]) {
    e.preventDefault();
    if (current.empty()) {
      const first = cy.nodes('.expanded').first();
      if (!first.empty()) select(first.id());
      return;
    }
    const next = nearest(current, ...arrows[e.key]);
    if (next) select(next.id());
  } else if (e.key === 'Enter' || e.key === ' ') {
    e.preventDefault();
    if (!current.empty()) expand(current.id());
  } else if (e.key === 'f' || e.key === 'F') {
    fit();
  } else if (e.key === 'Escape') {
    cy.nodes(':selected').unselect();
  }
});

// / focuses the search from anywhere but a text field; Escape in the
// search goes back to the graph.
addEventListener('keydown', (e) => {
  const typing = e.target instanceof HTMLInputElement || e.target instanceof HTMLTextAreaElement || e.target?.isContentEditable;
  if (e.key === '/' && !typing && !e.altKey && !e.ctrlKey && !e.metaKey) {
    e.preventDefault();
    $('q').focus();
    $('q').select();
  }
});
$('q').addEventListener('keydown', (e) => {
  if (e.key === 'Escape') {
    e.preventDefault();
    $('q').blur();
    graphEl.focus();
  }
});

// ---- The legend and the edge filter ----

function swatch(type) {
  const s = el('span', { class: 'swatch', 'aria-hidden': 'true' });
  s.style.background = typeInfo(type).color;
  return s;
}

// legend lists the model's types that have nodes, each with its colour.
function legend(nodeTypes) {
  legendEl.replaceChildren(
    ...nodeTypes
      .filter((t) => t.count > 0)
      .map((t) =>
        el('li', { 'data-type': t.name, 'data-color': typeInfo(t.name).color, title: `${t.name}: ${t.count} nodes${t.description ? ' · ' + t.description : ''}` }, swatch(t.name), t.name),
      ),
  );
}

const hiddenLabels = new Set();
let showEdgeText = true;

// edgeFilter offers a checkbox per edge label that has edges, which shows
// or hides the edges with that label, and one for the labels' text.
function edgeFilter(edgeLabels) {
  const boxes = edgeLabels
    .filter((l) => l.count > 0)
    .map((l) => {
      const box = el('input', { type: 'checkbox', value: l.name, checked: '' });
      box.addEventListener('change', () => {
        if (box.checked) hiddenLabels.delete(l.name);
        else hiddenLabels.add(l.name);
        cy.edges().filter((e) => e.data('label') === l.name).toggleClass('filtered', !box.checked);
        edgeFilterEl.dataset.hidden = [...hiddenLabels].sort().join(' ');
      });
      return el('label', { 'data-label': l.name, title: `${l.name}: ${(l.from ?? []).join('|')} → ${(l.to ?? []).join('|')}, ${l.count} in the graph` }, box, l.name, el('span', { class: 'n' }));
    });
  const text = el('input', { type: 'checkbox', checked: '', id: 'edge-text' });
  text.addEventListener('change', () => {
    showEdgeText = text.checked;
    cy.edges().toggleClass('unlabelled', !showEdgeText);
  });
  edgeFilterEl.replaceChildren(edgeFilterEl.querySelector('legend'), ...boxes, el('label', { class: 'text-toggle' }, text, 'show label text'));
}

// ---- The details panel ----

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  e.append(...children.filter((c) => c != null));
  return e;
}

function typeBadge(type) {
  const b = el('span', { class: 'type' }, type);
  b.style.background = typeInfo(type).color;
  return b;
}

function value(v) {
  if (typeof v === 'string' && /^https?:\/\/\S+$/.test(v)) return el('a', { href: v, rel: 'noopener noreferrer' }, v);
  return typeof v === 'string' ? v : JSON.stringify(v, null, 1);
}

function nodeButton(n, onclick) {
  return el(
    'button',
    { type: 'button', class: 'node-button', 'data-id': n.id, title: `${label(n)} (${n.type} ${n.id})`, onclick },
    typeBadge(n.type),
    el('span', {}, label(n), ' ', el('span', { class: 'id' }, n.id)),
  );
}

function showDetails(n, changed = false) {
  if (!n) return;
  const props = el('dl', {});
  for (const [k, v] of Object.entries(n.properties ?? {}).sort(([a], [b]) => a.localeCompare(b))) {
    props.append(el('dt', {}, k), el('dd', {}, value(v)));
  }
  const neighbours = el('ul', {});
  cy.getElementById(n.id)
    .neighborhood('node')
    .sort((a, b) => a.data('label').localeCompare(b.data('label')))
    .forEach((m) => neighbours.append(el('li', {}, nodeButton(m.data('node'), () => expand(m.id())))));
  const counts = el('ul', {});
  for (const c of n.edgeCounts ?? cy.getElementById(n.id).data('counts') ?? []) {
    counts.append(el('li', {}, `${c.direction === 'out' ? '→' : '←'} ${c.label}: ${c.count}`));
  }
  if (n.edgeCounts) cy.getElementById(n.id).data('counts', n.edgeCounts);
  detailsEl.replaceChildren(
    el('h2', {}, label(n)),
    el('p', { class: 'meta' }, typeBadge(n.type), ` ${n.id} · revision `, el('span', { class: 'revision' }, String(n.revision)), ` · updated ${n.updatedAt ?? ''}`),
    el(
      'div',
      { class: 'actions' },
      el('button', { type: 'button', onclick: () => expand(n.id, { fresh: true }) }, 'Show only this and its neighbours'),
      el('a', { href: linkPath(n.id), class: 'permalink', title: 'A link to this node in the explorer' }, 'Link'),
    ),
    el('h3', {}, 'Properties'),
    props,
    counts.childElementCount ? el('h3', {}, 'Edges') : null,
    counts.childElementCount ? counts : null,
    el('h3', {}, 'Neighbours shown'),
    neighbours,
  );
  detailsEl.dataset.id = n.id;
  detailsEl.dataset.revision = n.revision;
  if (changed) props.classList.add('changed');
}

// ---- Search ----

$('search').addEventListener('submit', async (e) => {
  e.preventDefault();
  const q = $('q').value.trim();
  if (!q) return;
  busy(`Searching “${q}”…`);
  try {
    const { searchNodes } = await gql(SEARCH, { q });
    hitsEl.replaceChildren(
      ...searchNodes.hits.map(({ node }) => el('li', {}, nodeButton(node, () => expand(node.id, { fresh: true })))),
    );
    done(searchNodes.hits.length ? `${searchNodes.hits.length} found for “${q}”` : `Nothing found for “${q}”`);
  } catch (err) {
    fail(err);
  }
});

// ---- Where to start ----

// connectedness ranks the model's types by edges per node, from the
// counts describe_model keeps (an edge label with several end types
// shares its count between them).
function connectedness(nodeTypes, edgeLabels) {
  const ends = new Map();
  for (const l of edgeLabels) {
    for (const side of [l.from ?? [], l.to ?? []]) {
      for (const t of side) ends.set(t, (ends.get(t) ?? 0) + l.count / side.length);
    }
  }
  return nodeTypes
    .filter((t) => t.count > 0)
    .map((t) => ({ name: t.name, score: (ends.get(t.name) ?? 0) / t.count }))
    .sort((a, b) => b.score - a.score || a.name.localeCompare(b.name));
}

// suggest lists the first nodes of the four best-connected types and
// returns the best-connected node of the first type: three small
// queries, whatever the size of the graph.
async function suggest(nodeTypes, edgeLabels) {
  const ranked = connectedness(nodeTypes, edgeLabels).slice(0, 4);
  if (ranked.length === 0) return null;
  const vars = Object.fromEntries([0, 1, 2, 3].map((i) => [`t${i}`, ranked[Math.min(i, ranked.length - 1)].name]));
  const data = await gql(SUGGEST, vars);
  const seen = new Set();
  const groups = [0, 1, 2, 3]
    .map((i) => (data[`s${i}`]?.nodes ?? []).filter((n) => !seen.has(n.id) && seen.add(n.id)))
    .filter((g) => g.length);
  if (groups.length === 0) return null;
  const first = groups[0];
  const ids = Object.fromEntries([0, 1, 2, 3, 4].map((i) => [`d${i}`, first[Math.min(i, first.length - 1)].id]));
  const degrees = await gql(DEGREES, ids);
  const degree = new Map();
  for (const k of Object.keys(ids)) {
    const n = degrees[k]?.node;
    if (n) degree.set(n.id, (n.edgeCounts ?? []).reduce((s, c) => s + c.count, 0));
  }
  const best = [...first].sort((a, b) => (degree.get(b.id) ?? 0) - (degree.get(a.id) ?? 0))[0];
  suggestionsEl.replaceChildren(
    ...groups.flat().map((n) => el('li', {}, nodeButton(n, () => expand(n.id, { fresh: true })))),
  );
  suggestEl.hidden = false;
  return { id: best.id, edges: degree.get(best.id) ?? 0 };
}

// ---- Live updates ----

let lastSeq = 0;

// follow subscribes to every committed change after lastSeq and applies
// the ones that touch what is drawn; when the socket drops, it subscribes
// again from the last change it saw, so nothing is missed or applied twice.
async function follow() {
  const client = createClient({ url: wsURL.href, lazy: true, retryAttempts: 0 });
  for (let wait = 1000; ; wait = Math.min(wait * 2, 30000)) {
    try {
      const changes = client.iterate({ query: FOLLOW, variables: { since: lastSeq } });
      liveEl.dataset.live = 'on';
      liveEl.textContent = 'live';
      for await (const r of changes) {
        if (r.errors?.length) throw new Error(r.errors.map((e) => e.message).join('; '));
        const c = r.data.changes;
        if (c.seq <= lastSeq) continue;
        lastSeq = c.seq;
        wait = 1000;
        await apply(c);
      }
    } catch (err) {
      console.warn('change feed:', err);
    }
    liveEl.dataset.live = 'off';
    liveEl.textContent = 'reconnecting…';
    await new Promise((r) => setTimeout(r, wait));
  }
}

// apply brings one change into the picture: deleted nodes and edges go,
// changed nodes are read again, new edges at expanded nodes are drawn.
async function apply(c) {
  for (const e of c.edges ?? []) {
    if (e.action === 'deleted') cy.getElementById(edgeID(e)).remove();
  }
  const gone = (c.nodes ?? []).filter((n) => n.action === 'deleted').map((n) => n.id);
  gone.forEach((id) => cy.getElementById(id).remove());
  const reread = new Set((c.nodes ?? []).filter((n) => n.action !== 'deleted' && !cy.getElementById(n.id).empty()).map((n) => n.id));
  const reexpand = new Set();
  for (const e of (c.edges ?? []).filter((x) => x.action !== 'deleted')) {
    for (const end of [e.from, e.to]) if (cy.getElementById(end).hasClass('expanded')) reexpand.add(end);
  }
  reexpand.forEach((id) => reread.delete(id));
  if (reread.size === 0 && reexpand.size === 0) {
    if (gone.length) counts();
    return;
  }
  const ids = [...reread, ...reexpand];
  const vars = ids.map((_, i) => `$i${i}: String!`).join(', ');
  const fields = ids
    .map((_, i) =>
      i < reread.size
        ? `n${i}: getNode(id: $i${i}) { node { ...N edgeCounts { label direction count } } }`
        : `n${i}: getNode(id: $i${i}) { node { ...N edgeCounts { label direction count } } } e${i}: neighbors(id: $i${i}, limit: 60) { nodes { node { ...N } } edges { from label to key } }`,
    )
    .join('\n');
  const { data } = await post(`query Reread(${vars}) {\n${fields}\n} ${NODE}`, Object.fromEntries(ids.map((id, i) => [`i${i}`, id])));
  let added = 0;
  ids.forEach((id, i) => {
    const n = data?.[`n${i}`]?.node;
    if (!n) return;
    put([n], [], null);
    const nb = data[`e${i}`];
    if (nb) added += put(nb.nodes.map((x) => x.node), nb.edges ?? [], id);
    const shown = cy.getElementById(id);
    shown.addClass('changed');
    setTimeout(() => shown.removeClass('changed'), 1500);
    if (detailsEl.dataset.id === id) showDetails(n, true);
  });
  if (added) {
    await ring(detailsEl.dataset.id && !cy.getElementById(detailsEl.dataset.id).empty() ? detailsEl.dataset.id : ids[0]);
    fit();
  }
  counts();
  done(`Change ${c.seq} (${c.op}) touched ${ids.join(', ')}`);
}

// ---- Status ----

function busy(msg) {
  graphEl.dataset.busy = 'true';
  statusEl.className = '';
  statusEl.textContent = msg;
}

function done(msg) {
  delete graphEl.dataset.busy;
  statusEl.className = '';
  statusEl.textContent = msg;
}

function fail(err) {
  delete graphEl.dataset.busy;
  statusEl.className = 'error';
  statusEl.textContent = String(err.message ?? err);
}

// ---- Start ----

// linked is the node the address names: ?id=…, else #….
function linked() {
  return new URLSearchParams(location.search).get('id') || hashID();
}

function hashID() {
  try {
    return decodeURIComponent(location.hash.slice(1));
  } catch {
    return location.hash.slice(1);
  }
}

async function start() {
  let model = { nodeTypes: [], edgeLabels: [] };
  try {
    const { describeModel, resource } = await gql(START);
    model = { nodeTypes: describeModel.nodeTypes ?? [], edgeLabels: describeModel.edgeLabels ?? [] };
    model.nodeTypes.sort((a, b) => a.name.localeCompare(b.name));
    for (const t of model.nodeTypes) typeInfo(t.name).display = t.display ?? 'name';
    legend(model.nodeTypes);
    edgeFilter(model.edgeLabels);
    // Following from the sequence number read before any node is loaded
    // means no change after that load can slip by unseen.
    lastSeq = resource?.json?.lastSeq ?? 0;
  } catch (err) {
    fail(err);
  }
  follow();
  addEventListener('hashchange', () => {
    const id = hashID();
    if (id && detailsEl.dataset.id !== id) expand(id, { fresh: cy.getElementById(id).empty() });
  });
  const id = linked();
  if (id) {
    // A link opens its node at once; the suggestions fill in meanwhile.
    const listed = suggest(model.nodeTypes, model.edgeLabels).catch((err) => console.warn('suggestions:', err));
    await expand(id, { fresh: true });
    await listed;
  } else {
    const opening = expanding;
    let picked = null;
    try {
      picked = await suggest(model.nodeTypes, model.edgeLabels);
    } catch (err) {
      fail(err);
    }
    // Unless something else was asked for meanwhile (a search hit, say).
    if (expanding === opening) {
      if (picked) await expand(picked.id, { fresh: true, why: `Best-connected suggestion (${picked.edges} edges)` });
      else done('The graph is empty: add nodes over MCP, REST or GraphQL, then search for them.');
    }
  }
  graphEl.dataset.ready = 'true';
}

start();
