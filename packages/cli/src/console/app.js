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
  // No fading: the overview's labels are redrawn at every zoom, and a closed one must not linger under the new.
  const map = L.map(id, { preferCanvas: true, worldCopyJump: true, fadeAnimation: false }).setView([20, 0], 2);
  map.attributionControl.setPrefix(false);
  // Its own pane and canvas under the jobs' (overlayPane, z 400), so it never hides them.
  map.createPane('base').style.zIndex = '250';
  const renderer = L.canvas({ pane: 'base' });
  const entry = { map, layers: L.layerGroup().addTo(map), markers: L.layerGroup().addTo(map), points: [], tiles: null, fitted: '', features: 0 };
  maps[id] = entry;
  // The jobs' dots are grouped again at every zoom: close together at this zoom, one dot for them all.
  map.on('zoomend', () => placeMarkers(entry));
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
  const points = [];
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
    // On the overview, jobs far apart are specks: a labelled dot per job (or per group of close jobs) shows where each is.
    if (label) points.push({ center: jobBounds.getCenter(), bounds: jobBounds, label, jobId });
  }
  entry.points = points;
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
  placeMarkers(entry);
  entry.map.getContainer().dataset.drawn = 'true';
}

/** The text of a group's label: the job's own, or how many jobs it holds (short, so that it fits where a job's would not). */
function groupLabel(group) {
  return group.members.length === 1 ? group.members[0].label : `${group.members.length} jobs`;
}

/** Where a label may go, in the order tried, and the Leaflet tooltip offset of each. */
const LABEL_SIDES = { right: [8, 0], left: [-8, 0], bottom: [0, 8], top: [0, -8] };
/** The offset plus Leaflet's margin for the tooltip's tip (.leaflet-tooltip-right and the others: 6 px). */
const LABEL_GAP_PX = 14;
/** Dots closer than this (centres, px) become one: the group dot's radius is 12. */
const MIN_DOT_DISTANCE_PX = 24;

/** A label's size as the map draws it, measured once per text in the map's own fonts. */
const labelSizes = new Map();
function labelSize(map, text, grouped) {
  const key = `${grouped}:${text}`;
  if (!labelSizes.has(key)) {
    const probe = el('div', text, `leaflet-tooltip job-label${grouped ? ' job-group' : ''}`);
    probe.style.cssText = 'visibility:hidden;left:0;top:0';
    map.getContainer().append(probe);
    // A pixel of slack each way: boxes that do not meet are labels that do not touch.
    labelSizes.set(key, { width: probe.offsetWidth + 2, height: probe.offsetHeight + 2 });
    probe.remove();
  }
  return labelSizes.get(key);
}

/** The screen box of a group's label on `side` of its dot. */
function labelBox(map, group, side) {
  const { width, height } = labelSize(map, groupLabel(group), group.members.length > 1);
  const { x, y } = group.at;
  const gap = LABEL_GAP_PX;
  if (side === 'right') return { left: x + gap, right: x + gap + width, top: y - height / 2, bottom: y + height / 2 };
  if (side === 'left') return { left: x - gap - width, right: x - gap, top: y - height / 2, bottom: y + height / 2 };
  if (side === 'bottom') return { left: x - width / 2, right: x + width / 2, top: y + gap, bottom: y + gap + height };
  return { left: x - width / 2, right: x + width / 2, top: y - gap - height, bottom: y - gap };
}
const boxesMeet = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
const covers = (box, point) => point.x > box.left && point.x < box.right && point.y > box.top && point.y < box.bottom;

/**
 * Lays the jobs' dots out so that no two labels overlap, nor a label covers a
 * dot, at the map's zoom: from left to right, each label goes right of its
 * dot, else left, below or above, on the map; a dot whose label fits nowhere
 * joins the nearest other (one dot at their mean position, labelled
 * "N jobs"), and the layout starts again, until every label fits.
 */
function groupPoints(map, points) {
  const size = map.getSize();
  const onMap = (box) => box.left >= 0 && box.top >= 0 && box.right <= size.x && box.bottom <= size.y;
  let groups = points.map((point) => ({ members: [point], at: map.latLngToContainerPoint(point.center), side: 'right' }));
  for (;;) {
    groups.sort((a, b) => a.at.x - b.at.x);
    const labels = [];
    // Dots on top of each other are one place: the first of a pair closer than a dot's width is merged.
    let homeless = groups.find((g, i) => groups.some((o, j) => j !== i && Math.hypot(o.at.x - g.at.x, o.at.y - g.at.y) < MIN_DOT_DISTANCE_PX)) || null;
    for (const group of homeless ? [] : groups) {
      // No label over another label, nor over another job's dot.
      const dots = groups.filter((other) => other !== group).map((other) => other.at);
      const free = (box) => !labels.some((other) => boxesMeet(box, other)) && !dots.some((dot) => covers(box, dot));
      const side = Object.keys(LABEL_SIDES).find((s) => onMap(labelBox(map, group, s)) && free(labelBox(map, group, s)));
      if (side) {
        group.side = side;
        labels.push(labelBox(map, group, side));
        continue;
      }
      homeless = group;
      break;
    }
    // Alone and still not fitting (a map narrower than its label): it keeps its place, on the right.
    if (!homeless || groups.length === 1) return groups;
    const distance = (g) => Math.hypot(g.at.x - homeless.at.x, g.at.y - homeless.at.y);
    const nearest = groups.filter((g) => g !== homeless).reduce((best, g) => (distance(g) < distance(best) ? g : best));
    const n = homeless.members.length + nearest.members.length;
    const at = L.point(
      (homeless.at.x * homeless.members.length + nearest.at.x * nearest.members.length) / n,
      (homeless.at.y * homeless.members.length + nearest.at.y * nearest.members.length) / n,
    );
    groups = [{ members: [...nearest.members, ...homeless.members], at, side: 'right' }, ...groups.filter((g) => g !== homeless && g !== nearest)];
  }
}

/** Draws a labelled dot per job, or per group of jobs too close at this zoom to label apart. */
function placeMarkers(entry) {
  entry.markers.clearLayers();
  if (!entry.points || entry.points.length === 0) return;
  const map = entry.map;
  for (const group of groupPoints(map, entry.points)) {
    const single = group.members.length === 1 ? group.members[0] : null;
    const groupBounds = group.members.reduce((b, m) => b.extend(m.bounds), L.latLngBounds(group.members[0].bounds.getSouthWest(), group.members[0].bounds.getNorthEast()));
    const marker = L.circleMarker(map.containerPointToLatLng(group.at), {
      radius: single ? 8 : 12,
      color: '#1c3d6e',
      weight: 2,
      fillColor: single ? '#e8590c' : '#1c5fd4',
      fillOpacity: 0.9,
    });
    // The label opens the job (a group's zooms in to its jobs); the dot zooms to what it stands for.
    marker.bindTooltip(groupLabel(group), {
      permanent: true,
      direction: group.side,
      offset: LABEL_SIDES[group.side],
      className: single ? 'job-label' : 'job-label job-group',
      interactive: true,
    });
    const zoomIn = () => map.fitBounds(groupBounds, { padding: [20, 20], paddingBottomRight: [200, 20], maxZoom: 17, animate: false });
    marker.on('click', zoomIn);
    if (single) {
      marker.on('dblclick', () => {
        location.hash = `#/job/${encodeURIComponent(single.jobId)}`;
      });
    }
    marker.addTo(entry.markers);
    const tooltip = marker.getTooltip();
    const element = tooltip && tooltip.getElement();
    if (!element) continue;
    if (single) {
      element.dataset.jobId = single.jobId;
      element.addEventListener('click', () => {
        location.hash = `#/job/${encodeURIComponent(single.jobId)}`;
      });
    } else {
      element.dataset.jobIds = group.members.map((m) => m.jobId).join(' ');
      element.title = `${group.members.map((m) => m.label).join('\n')}\n(click to zoom in)`;
      element.addEventListener('click', zoomIn);
    }
  }
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
