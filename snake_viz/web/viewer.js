// WebGL view of the snake: the prediction (/sim) solid, the robot (/measured) as a ghost,
// both from the URDF served at /robot.urdf; per-joint error (measured - simulated, as in
// compare_node and /compare/error) and traces of both heads and both centres of mass.
// Joint states arrive over the WebSocket /ws as {topic, stamp, name, position} (radians).
// A floating robot's base poses arrive as {topic, stamp, position [x, y, z] (m), orientation
// [x, y, z, w]} in ROS's z-up world: the prediction's on '/sim/odom', the robot's (an external
// pose sensor's) on '/measured/pose'. Each robot's root (base_link) is put at its pose and its
// path drawn as a trail of its own (the last ?trail=N points, default 2000); the camera follows
// the sim robot (snakeViewer.follow). Without poses a robot stays at the origin.
// A robot with elastic links: '/sim/link_deflections' {topic, stamp, links: {link_5: [[x, y, z],
// ...]}} gives each elastic link's bent centreline in its URDF frame (its axis along y), drawn
// over the link with the deflection (x and z) scaled by ?bend=N (default 10; 1: true size).
import * as THREE from 'three';
import { OrbitControls } from 'three/examples/jsm/controls/OrbitControls.js';
import URDFLoader from 'urdf-loader';

const TOPICS = { sim: '/sim/joint_states', measured: '/measured/joint_states' };
const POSE_TOPICS = { '/sim/odom': 'sim', '/measured/pose': 'measured' }; // topic -> role
const TRACE_POINTS = 600; // per trace, about 20 s at 30 Hz
const TRAIL_POINTS = trailPoints(new URLSearchParams(location.search).get('trail'));
const TRAIL_COLOURS = { sim: 0x70e070, measured: 0x4f6fff };
const TRACE_STEP = 5e-4; // [m] a point that moved less adds none (a still scene stays still)
const GHOST = { color: 0x7fc8ff, opacity: 0.4 };
const DEFLECTIONS_TOPIC = '/sim/link_deflections';
const BEND = bendScale(new URLSearchParams(location.search).get('bend'));
const BEND_COLOUR = 0xff5070;
const TRACE_COLOURS = {
  sim: { head: 0xffa040, com: 0xffe680 },
  measured: { head: 0x7fc8ff, com: 0xc8a0ff },
};

// What the page has done, for people and for the browser test.
const viewer = {
  robots: 0, meshes: 0, joints: 0, frames: 0, connected: false,
  messages: { sim: 0, measured: 0 },
  stamps: { sim: 0, measured: 0 }, // of the newest message [s]
  unknownJoints: 0,
  errorDeg: {}, // joint name -> measured - simulated [deg]
  com: { sim: null, measured: null }, // centre of mass in the robot's base_link [x, y, z] [m]
  // each robot's newest pose: base_link in ROS's world [m], quaternion [x, y, z, w]
  poses: {
    sim: { messages: 0, stamp: 0, position: null, orientation: null },
    measured: { messages: 0, stamp: 0, position: null, orientation: null },
  },
  trailLimit: TRAIL_POINTS,
  follow: true, // the camera's target moves with the sim robot's base
  show(role, visible) { parts[role].forEach((o) => { o.visible = visible; }); },
  // three.js world (y up) pose of a robot's root: {position, quaternion [x, y, z, w]}
  base(role = 'sim') {
    const robot = robots[role].robot;
    robot.updateWorldMatrix(true, false);
    const position = new THREE.Vector3();
    const quaternion = new THREE.Quaternion();
    robot.matrixWorld.decompose(position, quaternion, new THREE.Vector3());
    return { position: position.toArray(), quaternion: quaternion.toArray() };
  },
  // a robot's trail's points in three.js world coordinates, oldest first
  trail(role = 'sim') {
    const { line, count } = trails[role];
    line.updateWorldMatrix(true, false);
    const attr = line.geometry.attributes.position;
    return Array.from({ length: count }, (_, i) => (
      new THREE.Vector3().fromBufferAttribute(attr, i).applyMatrix4(line.matrixWorld).toArray()));
  },
  target() { return controls.target.toArray(); },
  bend: BEND,
  deflections: { messages: 0, stamp: 0, links: {} }, // link -> centreline drawn [m], scaled
};
window.snakeViewer = viewer;
const parts = { sim: [], measured: [] };

function bendScale(text) {
  const x = Number.parseFloat(text ?? '');
  return Number.isFinite(x) && x > 0 ? Math.min(x, 1000) : 10;
}

function trailPoints(text) {
  const n = Number.parseInt(text ?? '', 10);
  return Number.isFinite(n) ? Math.min(Math.max(n, 2), 1000000) : 2000;
}

const status = document.getElementById('status');
const container = document.getElementById('view');

// ---------------------------------------------------------------- scene
const renderer = new THREE.WebGLRenderer({ antialias: true });
renderer.setPixelRatio(window.devicePixelRatio);
container.appendChild(renderer.domElement);
const scene = new THREE.Scene();
scene.background = new THREE.Color(0x1e2227);
scene.add(new THREE.HemisphereLight(0xffffff, 0x404850, 2.0));
const sun = new THREE.DirectionalLight(0xffffff, 1.5);
sun.position.set(1, 2, 1.5);
scene.add(sun);
scene.add(new THREE.GridHelper(2, 20, 0x556070, 0x343a44));

const world = new THREE.Group(); // ROS: z up; three.js: y up
world.rotation.x = -Math.PI / 2;
scene.add(world);

const camera = new THREE.PerspectiveCamera(45, 1, 0.01, 50);
const controls = new OrbitControls(camera, renderer.domElement);

function resize() {
  const { clientWidth: w, clientHeight: h } = container;
  renderer.setSize(w, h, false);
  camera.aspect = w / Math.max(h, 1);
  camera.updateProjectionMatrix();
}
new ResizeObserver(resize).observe(container);

// ---------------------------------------------------------------- robots and traces
// A line of the last `capacity` points (in `parent`'s coordinates), the oldest dropped first.
function makeTrace(colour, capacity = TRACE_POINTS, parent = scene) {
  const geometry = new THREE.BufferGeometry();
  geometry.setAttribute('position', new THREE.BufferAttribute(new Float32Array(capacity * 3), 3));
  geometry.setDrawRange(0, 0);
  // drawn over the bodies: a centre of mass lies inside them
  const material = new THREE.LineBasicMaterial({ color: colour, depthTest: false });
  const line = new THREE.Line(geometry, material);
  line.frustumCulled = false;
  line.renderOrder = 1;
  parent.add(line);
  return { line, capacity, count: 0, last: null };
}

function addPoint(trace, p) {
  if (trace.last && trace.last.distanceTo(p) < TRACE_STEP) return;
  const attr = trace.line.geometry.attributes.position;
  if (trace.count === trace.capacity) attr.array.copyWithin(0, 3); else trace.count += 1;
  attr.setXYZ(trace.count - 1, p.x, p.y, p.z);
  attr.needsUpdate = true;
  trace.line.geometry.setDrawRange(0, trace.count);
  trace.last = p.clone();
}

function movingJoints(robot) {
  return Object.values(robot.joints)
    .filter((j) => j.jointType !== 'fixed')
    .sort((a, b) => a.name.localeCompare(b.name, undefined, { numeric: true }));
}

// The head's tip in the last link's frame: twice the visual's (centre of mass) offset.
function headOf(robot) {
  const joints = movingJoints(robot);
  const link = joints[joints.length - 1].children.find((c) => c.isURDFLink);
  const visual = link.children.find((c) => c.isURDFVisual);
  const tip = visual ? visual.position.clone().multiplyScalar(2) : new THREE.Vector3();
  return () => link.localToWorld(tip.clone());
}

// The centre of mass: the links' masses at their <inertial> origins, in world coordinates.
function comOf(robot) {
  const links = Object.values(robot.links).filter((l) => l.inertial.mass > 0);
  const total = links.reduce((sum, l) => sum + l.inertial.mass, 0);
  return () => {
    const com = new THREE.Vector3();
    for (const link of links) {
      const centre = link.localToWorld(new THREE.Vector3(...link.inertial.origin.xyz));
      com.addScaledVector(centre, link.inertial.mass / total);
    }
    return com;
  };
}

function makeGhost(robot) {
  const material = new THREE.MeshStandardMaterial({
    color: GHOST.color, transparent: true, opacity: GHOST.opacity, depthWrite: false,
  });
  robot.traverse((o) => { if (o.isMesh) o.material = material; });
}

const robots = {};
const latest = { sim: null, measured: null }; // name -> position [rad]
let dirty = false;
// each robot's base path, in ROS's world (the `world` group maps it to three.js)
const trails = {};
for (const role of ['sim', 'measured']) {
  trails[role] = makeTrace(TRAIL_COLOURS[role], TRAIL_POINTS, world);
  parts[role].push(trails[role].line);
}

async function loadRobots() {
  const response = await fetch('/robot.urdf');
  if (!response.ok) throw new Error(`/robot.urdf: HTTP ${response.status}`);
  const text = await response.text();
  const loader = new URDFLoader();
  for (const role of ['sim', 'measured']) {
    const robot = loader.parse(text);
    if (role === 'measured') makeGhost(robot);
    world.add(robot);
    robot.traverse((o) => { if (o.isMesh) viewer.meshes += 1; });
    const traces = {
      head: makeTrace(TRACE_COLOURS[role].head),
      com: makeTrace(TRACE_COLOURS[role].com),
    };
    robots[role] = { robot, points: { head: headOf(robot), com: comOf(robot) }, traces };
    parts[role].push(robot, traces.head.line, traces.com.line);
    viewer.robots += 1;
  }
  const joints = movingJoints(robots.sim.robot);
  viewer.joints = joints.length;
  buildTable(joints.map((j) => j.name));
  frame(robots.sim.robot);
}

// Look at the whole snake from above and to the side: far enough that its bounding box fits
// the 45 deg field of view (distance >= size / (2 tan 22.5 deg) = 1.2 size) with a margin.
function frame(robot) {
  world.updateMatrixWorld(true);
  const box = new THREE.Box3().setFromObject(robot);
  const centre = box.getCenter(new THREE.Vector3());
  const size = box.getSize(new THREE.Vector3()).length();
  controls.target.copy(centre);
  const direction = new THREE.Vector3(0.55, 0.65, 0.5).normalize();
  camera.position.copy(centre).add(direction.multiplyScalar(1.5 * size));
  controls.update();
}

// ---------------------------------------------------------------- error readout
const rows = {};
function buildTable(names) {
  const body = document.getElementById('errors');
  for (const name of names) {
    const tr = document.createElement('tr');
    tr.innerHTML = `<td>${name}</td><td>–</td><td>–</td><td>–</td>`;
    body.appendChild(tr);
    rows[name] = tr.children;
  }
}

const deg = (rad) => (rad * 180) / Math.PI;
function updateTable() {
  for (const [name, cells] of Object.entries(rows)) {
    const s = latest.sim?.[name];
    const m = latest.measured?.[name];
    cells[1].textContent = s === undefined ? '–' : deg(s).toFixed(1);
    cells[2].textContent = m === undefined ? '–' : deg(m).toFixed(1);
    if (s === undefined || m === undefined) continue;
    const error = deg(m - s);
    viewer.errorDeg[name] = error;
    cells[3].textContent = error.toFixed(2);
    const size = Math.abs(error);
    cells[3].style.color = size < 2 ? '#8d8' : size < 5 ? '#dd6' : '#f66';
  }
}

// ---------------------------------------------------------------- stream
// A robot's root (base_link) at the pose in ROS's world; robot.position/quaternion are in the
// `world` group's (ROS) coordinates. For the sim robot the camera moves by the base's
// displacement, so the user's orbit (offset and zoom) is kept.
function applyPose(role, message) {
  const { position: p, orientation: q } = message;
  const valid = (a, n) => Array.isArray(a) && a.length === n && a.every(Number.isFinite);
  if (!robots[role] || !valid(p, 3) || !valid(q, 4)) return; // the node sends none such
  const robot = robots[role].robot;
  world.updateMatrixWorld();
  const before = world.localToWorld(robot.position.clone());
  robot.position.fromArray(p);
  robot.quaternion.fromArray(q).normalize();
  addPoint(trails[role], robot.position);
  if (role === 'sim' && viewer.follow) {
    const shift = world.localToWorld(robot.position.clone()).sub(before);
    controls.target.add(shift);
    camera.position.add(shift);
    controls.update();
  }
  const { messages } = viewer.poses[role];
  viewer.poses[role] = { messages: messages + 1, stamp: message.stamp, position: p, orientation: q };
  dirty = true;
}

// Each elastic link's centreline as a line in its URDF link's frame, made on first use.
const bends = {};
function applyDeflections(message) {
  if (!robots.sim || typeof message.links !== 'object') return;
  for (const [name, points] of Object.entries(message.links)) {
    const link = robots.sim.robot.links[name];
    if (!link || !Array.isArray(points)) continue;
    const drawn = points.map(([x, y, z]) => [x * BEND, y, z * BEND]);
    if (!bends[name]) {
      const geometry = new THREE.BufferGeometry();
      geometry.setAttribute('position', new THREE.BufferAttribute(new Float32Array(drawn.length * 3), 3));
      const material = new THREE.LineBasicMaterial({ color: BEND_COLOUR, depthTest: false });
      bends[name] = new THREE.Line(geometry, material);
      bends[name].renderOrder = 2;
      bends[name].frustumCulled = false;
      link.add(bends[name]);
      parts.sim.push(bends[name]);
    }
    const attr = bends[name].geometry.attributes.position;
    drawn.slice(0, attr.count).forEach(([x, y, z], i) => attr.setXYZ(i, x, y, z));
    attr.needsUpdate = true;
    viewer.deflections.links[name] = drawn;
  }
  viewer.deflections.messages += 1;
  viewer.deflections.stamp = message.stamp;
  dirty = true;
}

function apply(message) {
  if (message.topic in POSE_TOPICS) { applyPose(POSE_TOPICS[message.topic], message); return; }
  if (message.topic === DEFLECTIONS_TOPIC) { applyDeflections(message); return; }
  const role = message.topic === TOPICS.sim ? 'sim' : message.topic === TOPICS.measured ? 'measured' : null;
  if (!role || !robots[role]) return;
  const positions = {};
  message.name.forEach((name, i) => {
    positions[name] = message.position[i];
    if (!robots[role].robot.setJointValue(name, message.position[i])) {
      if (!(name in robots[role].robot.joints)) viewer.unknownJoints += 1;
    }
  });
  latest[role] = { ...latest[role], ...positions };
  viewer.messages[role] += 1;
  viewer.stamps[role] = message.stamp;
  dirty = true;
}

function connect() {
  const socket = new WebSocket(`ws://${location.host}/ws`);
  socket.onopen = () => { viewer.connected = true; status.textContent = 'connected'; };
  socket.onmessage = (event) => apply(JSON.parse(event.data));
  socket.onclose = () => {
    viewer.connected = false;
    status.textContent = 'disconnected: retrying…';
    setTimeout(connect, 1000);
  };
}

// ---------------------------------------------------------------- loop
function render() {
  if (dirty) {
    dirty = false;
    world.updateMatrixWorld(true);
    for (const role of ['sim', 'measured']) {
      if (!latest[role]) continue;
      const { robot, points, traces } = robots[role];
      addPoint(traces.head, points.head());
      const com = points.com();
      addPoint(traces.com, com);
      viewer.com[role] = robot.worldToLocal(com).toArray();
    }
    updateTable();
    const { sim, measured } = viewer.poses;
    const poses = sim.messages || measured.messages ? `, ${sim.messages} + ${measured.messages} poses` : '';
    status.textContent = `connected: ${viewer.messages.sim} sim, ${viewer.messages.measured} measured${poses} messages`;
  }
  renderer.render(scene, camera);
  viewer.frames += 1;
  requestAnimationFrame(render);
}

loadRobots()
  .then(() => { resize(); connect(); requestAnimationFrame(render); })
  .catch((error) => {
    status.textContent = `cannot draw the robot: ${error.message}`;
    console.error('snake viewer:', error);
  });
