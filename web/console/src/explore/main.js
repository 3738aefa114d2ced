// The explorer: search for a node, see it and its neighbours as a graph
// (cytoscape.js), click a node to expand it and read its properties, and
// follow the change log live, so a node an agent changes re-renders. Every
// read goes through /graphql: queries over POST, the change feed as a
// `changes` subscription over a WebSocket.

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

const NODE = `fragment N on Node { id type revision updatedAt properties }`;
const SEARCH = `query Search($q: String!) {
  searchNodes(query: $q, limit: 20) { hits { node { id type properties } } truncated }
}`;
const EXPAND = `query Expand($id: String!) {
  getNode(id: $id) { node { ...N edgeCounts { label direction count } } }
  neighbors(id: $id, limit: 60) { nodes { node { ...N } } edges { from label to key } truncated }
} ${NODE}`;
const START = `query Start {
  describeModel { nodeTypes { name display } }
  resource(uri: "lore://changes") { json }
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

const cy = cytoscape({
  container: graphEl,
  wheelSensitivity: 0.3,
  maxZoom: 3,
  style: [
    {
      selector: 'node',
      style: {
        'background-color': 'data(color)',
        label: 'data(label)',
        color: css('--fg', '#1d2127'),
        'font-size': 11,
        'font-family': 'system-ui, sans-serif',
        'text-valign': 'bottom',
        'text-margin-y': 4,
        'text-wrap': 'ellipsis',
        'text-max-width': 140,
        width: 22,
        height: 22,
      },
    },
    { selector: 'node.expanded', style: { width: 30, height: 30, 'border-width': 3, 'border-color': css('--fg', '#1d2127') } },
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
        'font-size': 9,
        color: css('--muted', '#5d6670'),
        'text-rotation': 'autorotate',
        'text-background-color': css('--bg', '#fbfbfa'),
        'text-background-opacity': 0.8,
      },
    },
  ],
});
// For the browser's console and the browser test, which clicks nodes on
// the canvas where cytoscape drew them.
globalThis.loreExplorer = { cy };

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
        cy.add({ group: 'edges', data: { id, source: e.from, target: e.to, label: e.label } });
      }
    }
  });
  return fresh.length;
}

// layout settles the drawing with cytoscape's force-directed layout,
// starting from where the nodes are.
function layout(fit) {
  return new Promise((resolve) => {
    const l = cy.layout({
      name: 'cose',
      animate: false,
      randomize: false,
      fit,
      padding: 40,
      nodeDimensionsIncludeLabels: true,
      nodeRepulsion: () => 80000,
      nodeOverlap: 20,
      idealEdgeLength: () => 110,
      edgeElasticity: () => 100,
      gravity: 0.4,
      numIter: 1500,
    });
    l.one('layoutstop', resolve);
    l.run();
  });
}

// counts mirrors the graph's size into attributes others can wait on.
function counts() {
  graphEl.dataset.nodes = cy.nodes().length;
  graphEl.dataset.edges = cy.edges().length;
}

// expand draws a node with every neighbour and edge at it.
async function expand(id, { fresh = false } = {}) {
  busy(`Loading ${id}…`);
  try {
    const data = await gql(EXPAND, { id });
    const n = data.getNode.node;
    if (fresh) cy.elements().remove();
    put([n], [], null);
    const added = put(
      data.neighbors.nodes.map((x) => x.node),
      data.neighbors.edges ?? [],
      id,
    );
    cy.getElementById(id).addClass('expanded');
    if (fresh || added > 0) await layout(true);
    counts();
    select(id, n);
    done(
      `${n.id}: ${data.neighbors.nodes.length} neighbours` +
        (data.neighbors.truncated ? ' (more exist; the first 60 are shown)' : '') +
        ` · ${cy.nodes().length} nodes, ${cy.edges().length} edges shown`,
    );
  } catch (err) {
    fail(err);
  }
}

function select(id, node) {
  cy.nodes(':selected').unselect();
  cy.getElementById(id).select();
  if (location.hash.slice(1) !== id) history.replaceState(null, '', '#' + id);
  showDetails(node ?? cy.getElementById(id).data('node'));
}

cy.on('tap', 'node', (e) => {
  const id = e.target.id();
  if (e.target.hasClass('expanded')) select(id);
  else expand(id);
});

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
  return el('button', { type: 'button', class: 'node-button', 'data-id': n.id, onclick }, typeBadge(n.type), el('span', {}, label(n), ' ', el('span', { class: 'id' }, n.id)));
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
    el('div', { class: 'actions' }, el('button', { type: 'button', onclick: () => expand(n.id, { fresh: true }) }, 'Show only this and its neighbours')),
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
  if (added) await layout(false);
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

async function start() {
  try {
    const { describeModel, resource } = await gql(START);
    for (const t of [...describeModel.nodeTypes].sort((a, b) => a.name.localeCompare(b.name))) {
      typeInfo(t.name).display = t.display ?? 'name';
    }
    // Following from the sequence number read before any node is loaded
    // means no change after that load can slip by unseen.
    lastSeq = resource?.json?.lastSeq ?? 0;
  } catch (err) {
    fail(err);
  }
  follow();
  const open = () => {
    const id = decodeURIComponent(location.hash.slice(1));
    if (id && detailsEl.dataset.id !== id) expand(id, { fresh: cy.getElementById(id).empty() });
  };
  addEventListener('hashchange', open);
  open();
  graphEl.dataset.ready = 'true';
}

start();
