/* The jobs console page: a live jobs table, filters, a job page, and maps of
 * AOIs and results drawn with Leaflet on a canvas over a plain background
 * (an OpenStreetMap basemap only when asked for). Plain browser JavaScript,
 * no build step; every text from the ledger goes in through textContent. */
'use strict';

const REFRESH_MS = 2000;
const OVERVIEW_JOBS = 25;
const AOI_STYLE = { color: '#1c5fd4', weight: 2, dashArray: '6 3', fill: false };
const RESULT_STYLE = { color: '#a33c00', weight: 1, fillColor: '#e8590c', fillOpacity: 0.5 };
const FINAL = ['SUCCEEDED', 'FAILED', 'REJECTED', 'CANCELLED'];

const $ = (id) => document.getElementById(id);
const el = (tag, text, cls) => {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
};

async function api(path) {
  const response = await fetch(path, { headers: { accept: 'application/json' } });
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
  return response.json();
}

// ---- Maps
const maps = {};
let basemapOn = false;
// The offline base layer (Natural Earth land and borders, served by the console): read once, drawn on every map.
let baseData = null;
function baseLayer() {
  baseData = baseData || api('/basemap.json').catch(() => null);
  return baseData;
}
function makeMap(id) {
  const map = L.map(id, { preferCanvas: true, worldCopyJump: true }).setView([20, 0], 2);
  map.attributionControl.setPrefix(false);
  // Its own pane and canvas under the jobs' (overlayPane, z 400), so it never hides them.
  map.createPane('base').style.zIndex = '250';
  const renderer = L.canvas({ pane: 'base' });
  const entry = { map, layers: L.layerGroup().addTo(map), tiles: null, fitted: '', features: 0 };
  maps[id] = entry;
  baseLayer().then((base) => {
    if (!base) return;
    L.geoJSON(base.land, { pane: 'base', renderer, interactive: false, style: { stroke: false, fillColor: '#f4f1e8', fillOpacity: 1 } }).addTo(map);
    L.geoJSON(base.borders, { pane: 'base', renderer, interactive: false, style: { color: '#9aa5b1', weight: 0.8, fill: false } }).addTo(map);
    map.attributionControl.addAttribution('Natural Earth');
    map.getContainer().dataset.basemap = 'drawn';
  });
  applyBasemap(entry);
  return entry;
}
function applyBasemap(entry) {
  if (basemapOn && !entry.tiles) {
    entry.tiles = L.tileLayer('https://tile.openstreetmap.org/{z}/{x}/{y}.png', { maxZoom: 19, attribution: '&copy; OpenStreetMap contributors' }).addTo(entry.map);
  } else if (!basemapOn && entry.tiles) {
    entry.tiles.remove();
    entry.tiles = null;
  }
}
function geoLayer(data, style) {
  return L.geoJSON(data, { style, pointToLayer: (_f, latlng) => L.circleMarker(latlng, { ...style, radius: 4 }) });
}
/** Draws AOIs and results of jobs on a map; fits the view when the set of jobs changes. */
function drawOnMap(entry, drawings, signature) {
  // Redraw only when something changed: a canvas cleared every refresh flickers.
  if (signature !== undefined && signature === entry.signature) return;
  entry.signature = signature;
  entry.layers.clearLayers();
  let bounds = null;
  let features = 0;
  let aois = 0;
  for (const { aoi, results, label, jobId } of drawings) {
    let jobBounds = null;
    for (const [data, style] of [[aoi, AOI_STYLE], [results, RESULT_STYLE]]) {
      if (!data || !data.features || data.features.length === 0) continue;
      const layer = geoLayer(data, style).addTo(entry.layers);
      if (style === RESULT_STYLE) features += data.features.length;
      else aois += data.features.length;
      const b = layer.getBounds();
      if (b.isValid()) jobBounds = jobBounds ? jobBounds.extend(b) : L.latLngBounds(b.getSouthWest(), b.getNorthEast());
    }
    if (!jobBounds) continue;
    bounds = bounds ? bounds.extend(jobBounds) : L.latLngBounds(jobBounds.getSouthWest(), jobBounds.getNorthEast());
    // On the overview, jobs far apart are specks: a marker per job shows where each is; a click zooms in.
    if (label) {
      const marker = L.circleMarker(jobBounds.getCenter(), { radius: 8, color: '#1c3d6e', weight: 2, fillColor: '#e8590c', fillOpacity: 0.9 });
      // A label on every dot says which job it is; the label opens the job, the dot zooms to it.
      marker.bindTooltip(label, { permanent: true, direction: 'right', offset: [8, 0], className: 'job-label', interactive: true });
      marker.on('click', () => entry.map.fitBounds(jobBounds, { padding: [20, 20], maxZoom: 17, animate: false }));
      marker.on('dblclick', () => {
        location.hash = `#/job/${encodeURIComponent(jobId)}`;
      });
      marker.addTo(entry.layers);
      const tooltip = marker.getTooltip();
      const element = tooltip && tooltip.getElement();
      if (element) {
        element.dataset.jobId = jobId;
        element.addEventListener('click', () => {
          location.hash = `#/job/${encodeURIComponent(jobId)}`;
        });
      }
    }
  }
  entry.features = features;
  entry.map.getContainer().dataset.features = String(features);
  entry.map.getContainer().dataset.aois = String(aois);
  const key = bounds ? bounds.toBBoxString() : '';
  if (bounds && key !== entry.fitted) {
    // Room on the right for the dots' labels.
    const labelled = drawings.some((d) => d.label);
    entry.map.fitBounds(bounds, { paddingTopLeft: [20, 20], paddingBottomRight: [labelled ? 200 : 20, 20], maxZoom: 17, animate: false });
    entry.fitted = key;
  }
  entry.map.getContainer().dataset.drawn = 'true';
}

// ---- Geometry of a job (cached while its status is the same)
const geometryCache = new Map();
async function geometryOf(job) {
  const key = `${job.jobId}:${job.status}`;
  if (!geometryCache.has(key)) {
    geometryCache.set(
      key,
      Promise.all([
        api(`/api/jobs/${encodeURIComponent(job.jobId)}/aoi`).catch(() => null),
        job.status === 'SUCCEEDED' ? api(`/api/jobs/${encodeURIComponent(job.jobId)}/results`).catch(() => null) : null,
      ]).then(([aoi, results]) => ({ aoi, results })),
    );
  }
  return geometryCache.get(key);
}

// ---- The list
const routesSeen = new Set();
function formatDuration(seconds) {
  if (seconds === undefined || seconds === null) return '';
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
}
function progress(percent) {
  const wrap = el('span');
  const bar = el('span', null, 'bar');
  const fill = el('span');
  fill.style.width = `${Math.max(0, Math.min(100, percent || 0))}%`;
  bar.append(fill);
  wrap.append(bar, document.createTextNode(` ${percent === undefined || percent === null ? '' : `${percent}%`}`));
  return wrap;
}

/** Each retry right after the job it retried (the newest first otherwise). */
function withRetriesUnderOriginals(jobs) {
  const byId = new Map(jobs.map((job) => [job.jobId, job]));
  const rootOf = (job) => {
    let root = job;
    for (let hops = 0; root.retryOf && byId.has(root.retryOf) && hops < 20; hops++) root = byId.get(root.retryOf);
    return root;
  };
  const groups = new Map();
  for (const job of jobs) {
    const root = rootOf(job);
    if (!groups.has(root.jobId)) groups.set(root.jobId, []);
    groups.get(root.jobId).push(job);
  }
  return [...groups.values()].flatMap((group) => group.sort((a, b) => (a.attempt || 1) - (b.attempt || 1)));
}

async function refreshList() {
  const status = $('filter-status').value;
  const route = $('filter-route').value;
  const { jobs } = await api(`/api/jobs?limit=200${status ? `&status=${encodeURIComponent(status)}` : ''}`);
  for (const job of jobs) routesSeen.add(job.route);
  const routeSelect = $('filter-route');
  for (const name of [...routesSeen].sort()) {
    if (![...routeSelect.options].some((o) => o.value === name)) routeSelect.append(new Option(name, name));
  }
  // A retry goes right under its original, marked as its retry (not a second row that looks the same).
  const shown = withRetriesUnderOriginals(jobs.filter((job) => !route || job.route === route));
  const body = $('jobs').tBodies[0];
  body.replaceChildren(
    ...shown.map((job) => {
      const tr = el('tr');
      tr.dataset.jobId = job.jobId;
      tr.dataset.status = job.status;
      const file = el('td', job.file.replace(/^inbox\//, ''), 'file');
      file.title = job.jobId;
      if (job.retryOf) {
        tr.classList.add('retry');
        file.textContent = `\u21b3 retry ${job.attempt || 2} of ${job.file.replace(/^inbox\//, '')}`;
        file.title = `${job.jobId}: retry of ${job.retryOf}`;
      } else if (job.retriedBy) {
        file.append(el('small', ' (retried)', 'retried'));
      }
      const status = el('td');
      status.append(el('span', job.status, `status ${job.status}`));
      const cost = job.cost === undefined || job.cost === null ? '' : `${Math.round(job.cost * 100) / 100}${job.costIsEstimate ? ' (est.)' : ''}`;
      const prog = el('td');
      prog.append(progress(job.percentCompleted));
      if (job.parts) prog.append(el('small', ` ${job.parts.done}/${job.parts.planned} parts`));
      tr.append(file, status, el('td', job.route), el('td', cost), el('td', formatDuration(job.durationSeconds)), prog, el('td', new Date(job.updatedAt).toLocaleTimeString()));
      tr.addEventListener('click', () => {
        location.hash = `#/job/${encodeURIComponent(job.jobId)}`;
      });
      return tr;
    }),
  );
  $('count').textContent = `${shown.length} job${shown.length === 1 ? '' : 's'}`;
  $('updated').textContent = `updated ${new Date().toLocaleTimeString()}`;
  const overview = maps['overview-map'] || makeMap('overview-map');
  const drawn = shown.slice(0, OVERVIEW_JOBS);
  const drawings = await Promise.all(drawn.map(async (job) => ({ ...(await geometryOf(job)), label: `${job.file.replace(/^inbox\//, '').split('/').pop()}${job.retryOf ? ` (retry ${job.attempt || 2})` : ''}: ${job.status}`, jobId: job.jobId })));
  drawOnMap(overview, drawings, drawn.map((job) => `${job.jobId}:${job.status}`).join(','));
}

// ---- A job
async function refreshJob(jobId) {
  const job = await api(`/api/jobs/${encodeURIComponent(jobId)}`);
  $('job-title').textContent = `${job.input.key.replace(/^inbox\//, '')}: ${job.status}`;
  const facts = [
    ['job', job.jobId],
    ['status', job.status + (job.percentCompleted !== undefined && !FINAL.includes(job.status) ? ` (${job.percentCompleted}% of the job)` : '')],
    ['input', `s3://${job.input.bucket}/${job.input.key} (${job.input.size} bytes)`],
    ['kind / route', `${job.kind} / ${job.routeName}`],
    ['area', job.areaSqKm !== undefined ? `${job.areaSqKm} km²` : undefined],
    // The server's figure: charged credits whenever known, the estimate only before (functions/core/credits.ts).
    ['cost', job.cost ? `${job.cost.credits} credits ${job.cost.kind === 'estimate' ? '(estimate)' : 'charged'}` : undefined],
    ['estimate', job.cost && job.cost.kind === 'charged' && job.estimatedCost !== undefined ? `${job.estimatedCost} credits` : undefined],
    ['Mapflow project', job.projectId],
    ['Mapflow mosaic', job.mosaicId],
    ['Mapflow image', job.imageId],
    ...(job.parts || []).map((p) => [`processing ${p.index}`, `${p.processingId || '-'} ${p.status || ''}${p.cost !== undefined ? `, ${p.cost} credits` : ''}`]),
    ['execution', job.executionArn],
    ['results', job.resultPrefix ? `s3://${job.input.bucket}/${job.resultPrefix}` : undefined],
    ['report', job.reportKey ? `s3://${job.input.bucket}/${job.reportKey}` : undefined],
    ['error', job.error ? `${job.error.code}: ${job.error.message}` : undefined],
    ['retry of', job.retryOf],
    ['retried as', job.retriedBy],
    ['created', job.createdAt],
    ['finished', job.finishedAt],
  ];
  $('job-facts').replaceChildren(...facts.filter(([, v]) => v !== undefined && v !== null && v !== '').flatMap(([k, v]) => [el('dt', k), el('dd', v, k === 'error' ? 'error' : '')]));
  $('job-history').replaceChildren(...job.statusHistory.map((h) => el('li', `${h.at}  ${h.status}${h.note ? `: ${h.note}` : ''}`)));
  const messages = [...(job.messages || []), ...((job.error && job.error.mapflowMessages) || []).map((m) => `${m.code} ${JSON.stringify(m.parameters || {})}`)];
  $('job-messages').replaceChildren(...(messages.length ? messages.map((m) => el('li', m)) : [el('li', 'none')]));
  const quicklooks = $('job-quicklooks');
  if (quicklooks.dataset.for !== `${job.jobId}:${job.status}`) {
    quicklooks.dataset.for = `${job.jobId}:${job.status}`;
    quicklooks.replaceChildren(
      ...(job.quicklooks.length
        ? job.quicklooks.map((key, index) => {
            const a = el('a');
            a.href = `/api/jobs/${encodeURIComponent(job.jobId)}/quicklook?index=${index}`;
            a.target = '_blank';
            const img = el('img');
            img.src = a.href;
            img.alt = key;
            a.append(img);
            return a;
          })
        : [el('p', 'none yet')]),
    );
  }
  const entry = maps['job-map'] || makeMap('job-map');
  const geometry = await geometryOf({ jobId: job.jobId, status: job.status });
  drawOnMap(entry, [geometry], `${job.jobId}:${job.status}`);
  const read = geometry.results && geometry.results.properties;
  // featuresCounted false: the server stopped counting after its byte cap, so the total is a lower bound.
  $('job-map-note').textContent = read
    ? `${read.featuresShown} of ${read.featuresCounted === false ? 'at least ' : ''}${read.featuresRead} result features shown`
    : 'no results to show';
  return job;
}

// ---- Routing and refresh
let timer = null;
let currentView = '';
async function tick() {
  clearTimeout(timer);
  const match = /^#\/job\/(.+)$/.exec(location.hash);
  try {
    if (match) {
      show('job');
      const job = await refreshJob(decodeURIComponent(match[1]));
      if (FINAL.includes(job.status)) return; // nothing more will change
    } else {
      show('list');
      await refreshList();
    }
  } catch (error) {
    $('updated').textContent = `cannot read: ${error.message}`;
  }
  timer = setTimeout(tick, REFRESH_MS);
}
function show(view) {
  $('list-view').hidden = view !== 'list';
  $('job-view').hidden = view !== 'job';
  if (view !== currentView) {
    currentView = view;
    // A map laid out while hidden must measure its container again.
    setTimeout(() => Object.values(maps).forEach((m) => m.map.invalidateSize()), 0);
  }
}

async function init() {
  const info = await api('/api/info');
  $('source').textContent = `reading ${info.source}${info.results ? '' : ' (no bucket access: the maps show no results)'}`;
  for (const status of info.statuses) $('filter-status').append(new Option(status, status));
  $('filter-status').addEventListener('change', tick);
  $('filter-route').addEventListener('change', tick);
  $('basemap').addEventListener('change', (event) => {
    basemapOn = event.target.checked;
    Object.values(maps).forEach(applyBasemap);
  });
  window.addEventListener('hashchange', tick);
  await tick();
}
init();
