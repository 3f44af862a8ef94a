'use strict';
// repomin/analysis/failingcall.js -- a Node preload that records the in-tree calls on the
// stack (function, parameter values, whether the module exports it) at the moment the
// failing exception is thrown (repomin.analysis.failingcall runs it; repomin.passes.carve
// turns the record into a direct call).
//
//   NODE_OPTIONS="--require .../failingcall.js" \
//   REPOMIN_CARVE_TARGET="/abs/file.js:LINE:COL" REPOMIN_CARVE_OUT=/tmp/x.json node build.js
//
// Optional: REPOMIN_CARVE_ROOT (the tree's root, default process.cwd()),
// REPOMIN_CARVE_FILES (newline-separated absolute paths of the other files on the failing
// stack: their throws pause too), REPOMIN_CARVE_DEPTH (frames recorded, 8).
// Mechanism (as Sentry's LocalVariables integration): an in-process
// inspector.Session with pause-on-exceptions "all". For a same-thread session
// every post() callback runs synchronously, and the Debugger.paused handler
// runs while the throwing JS is suspended, so everything below is synchronous.
// The program's behaviour is unchanged: we only read state and then resume.
// Nothing here may throw into the program: every step is guarded.
(function carve() {
  let inspector, fs, url, path;
  try {
    inspector = require('inspector'); fs = require('fs');
    url = require('url'); path = require('path');
  } catch (e) { return; }
  const target = /^(.*):(\d+):(\d+)$/.exec(process.env.REPOMIN_CARVE_TARGET || '');
  const out = process.env.REPOMIN_CARVE_OUT;
  if (!target || !out) return;
  const tFile = path.resolve(target[1]);
  const tLine = +target[2] - 1, tCol = +target[3] - 1;   // inspector is 0-based
  const root = path.resolve(process.env.REPOMIN_CARVE_ROOT || process.cwd()) + path.sep;
  const stackFiles = [tFile].concat((process.env.REPOMIN_CARVE_FILES || '').split('\n')
    .filter((f) => f !== '').map((f) => path.resolve(f)));
  // The target as the error's stack text prints it, not followed by another digit.
  const printed = new RegExp(target[0].replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '(?!\\d)');
  const depth = +process.env.REPOMIN_CARVE_DEPTH || 8;
  let session, done = false;
  // callFrame.url is empty in Node 20 (deprecated in the protocol): keep the
  // scriptId -> url map from Debugger.scriptParsed events instead.
  const scriptUrls = new Map();

  // Synchronous post(): returns the result or throws the protocol error.
  function call(method, params) {
    let err = null, res, got = false;
    session.post(method, params || {}, (e, r) => { err = e; res = r; got = true; });
    if (err) throw err;
    if (!got) throw new Error('inspector reply not synchronous: ' + method);
    return res;
  }

  // Frame url (file:///..., or a plain path) -> absolute file path or null.
  function framePath(u) {
    try {
      if (u.startsWith('file://')) return url.fileURLToPath(u);
      if (path.isAbsolute(u)) return u;
    } catch (e) { /* fall through */ }
    return null;
  }
  const inProject = (p) => p !== null && p.startsWith(root);

  // Parameter names from the source at functionLocation. V8 puts that
  // location at the "(" of a function/method/constructor, and at the first
  // parameter of an arrow function ("a => ..." or "(a, b) => ...").
  const sources = new Map();
  function paramNames(loc) {
    if (!sources.has(loc.scriptId)) {
      sources.set(loc.scriptId, call('Debugger.getScriptSource', { scriptId: loc.scriptId }).scriptSource.split('\n'));
    }
    const lines = sources.get(loc.scriptId);
    if (loc.lineNumber === 0 && loc.columnNumber === 0) return { unsupported: 'module top level' };
    const text = [lines[loc.lineNumber].slice(loc.columnNumber)]
      .concat(lines.slice(loc.lineNumber + 1, loc.lineNumber + 40)).join('\n')
      .replace(/^\s*async\b\s*(?=[(\w$])/, '');    // `async (a) =>` starts at `async`
    const single = /^\s*([A-Za-z_$][\w$]*)\s*=>/.exec(text);
    if (single) return { names: [single[1]] };
    if (!/^\s*\(/.test(text)) return { unsupported: 'cannot find parameter list' };
    const names = []; let d = 0, cur = '';
    for (let i = text.indexOf('('); i < text.length; i++) {   // up to matching ")",
      const c = text[i];                                       // split at depth-1 commas
      if (c === '(' || c === '[' || c === '{') { if (d++ === 0) continue; }
      else if (c === ')' || c === ']' || c === '}') { if (--d === 0) break; }
      else if (c === ',' && d === 1) { names.push(cur.trim()); cur = ''; continue; }
      cur += c;
    }
    if (cur.trim() !== '') names.push(cur.trim());
    const bad = names.find((n) => !/^[A-Za-z_$][\w$]*$/.test(n));
    // Destructuring, defaults, rest, comments: not handled.
    return bad !== undefined ? { names, unsupported: 'parameter ' + bad } : { names };
  }

  // A parameter's current value, only if it is a primitive we can write back.
  function paramValue(callFrameId, name) {
    try {
      const r = call('Debugger.evaluateOnCallFrame',
        { callFrameId, expression: name, throwOnSideEffect: true, silent: true });
      const o = r.result;
      if (r.exceptionDetails) return { unsupported: 'not available (optimized out?)' };
      if (o.subtype === 'null') return null;
      if (o.type === 'undefined') return { undefined: true };
      if (['string', 'boolean'].includes(o.type)) return o.value;
      if (o.type === 'number') return o.unserializableValue ? { unsupported: o.unserializableValue } : o.value;
      if (o.type === 'object' && (o.subtype === 'array' || o.className === 'Object')) {
        return plainData(callFrameId, name);
      }
      return { unsupported: o.subtype || o.type };
    } catch (e) { return { unsupported: 'evaluate failed: ' + e.message }; }
  }

  // An array or object of plain data (nested primitives, arrays and plain objects with
  // data properties only, no cycles) as JSON text, written back as a literal; anything
  // else (a class instance, a getter, a function inside) is unsupported. Evaluated without
  // side effects: only the walk's own temporaries change.
  const PLAIN = '(function (v) { var seen = []; function ok(x, d) {' +
    ' if (x === null) return true; var t = typeof x;' +
    " if (t === 'string' || t === 'boolean') return true;" +
    " if (t === 'number') return isFinite(x);" +
    " if (t !== 'object' || d > 16 || seen.indexOf(x) >= 0) return false; seen.push(x);" +
    ' var a = Array.isArray(x), p = Object.getPrototypeOf(x);' +
    ' if (a ? p !== Array.prototype : (p !== Object.prototype && p !== null)) return false;' +
    ' var ks = Object.getOwnPropertyNames(x); for (var i = 0; i < ks.length; i++) {' +
    " if (a && ks[i] === 'length') continue;" +
    ' var q = Object.getOwnPropertyDescriptor(x, ks[i]);' +
    " if (!('value' in q) || !q.enumerable || !ok(q.value, d + 1)) return false; }" +
    ' return true; } return ok(v, 0) ? JSON.stringify(v) : undefined; })';
  function plainData(callFrameId, name) {
    const r = call('Debugger.evaluateOnCallFrame', { callFrameId,
      expression: PLAIN + '(' + name + ')', throwOnSideEffect: true, silent: true,
      returnByValue: true });
    if (r.exceptionDetails || typeof r.result.value !== 'string') return { unsupported: 'object' };
    return { json: r.result.value };
  }

  // [[FunctionLocation]] of a JS value, via a temporary global.
  function fnLocation(fn) {
    const key = '__carve_tmp__';
    try {
      globalThis[key] = fn;
      const ref = call('Runtime.evaluate', { expression: 'globalThis.' + key, silent: true }).result;
      if (!ref.objectId) return null;
      const props = call('Runtime.getProperties', { objectId: ref.objectId, ownProperties: true });
      call('Runtime.releaseObject', { objectId: ref.objectId });
      const loc = (props.internalProperties || []).find((p) => p.name === '[[FunctionLocation]]');
      return loc ? loc.value.value : null;
    } catch (e) { return null; } finally { delete globalThis[key]; }
  }
  const sameLoc = (a, b) => a && b && a.scriptId === b.scriptId &&
    a.lineNumber === b.lineNumber && a.columnNumber === b.columnNumber;

  // Is the frame's function module.exports, or an own data property of it?
  function exportName(file, loc) {
    const mod = require.cache[file];
    if (!mod) return { unsupported: 'module not in require.cache (ESM?)' };
    const ex = mod.exports;
    if (typeof ex === 'function' && sameLoc(fnLocation(ex), loc)) return 'module.exports';
    if (ex === null || (typeof ex !== 'object' && typeof ex !== 'function')) return null;
    for (const k of Object.getOwnPropertyNames(ex)) {
      if (typeof ex === 'function' && (k === 'caller' || k === 'arguments')) continue;  // sloppy fn: caller = our caller
      const desc = Object.getOwnPropertyDescriptor(ex, k);   // no getters run
      if (desc && typeof desc.value === 'function' && sameLoc(fnLocation(desc.value), loc)) {
        return /^[A-Za-z_$][\w$]*$/.test(k) ? 'exports.' + k : 'exports[' + JSON.stringify(k) + ']';
      }
    }
    return null;
  }

  function describe(frame, file) {
    const rec = { path: file, functionName: frame.functionName,
      line: frame.location.lineNumber + 1, column: frame.location.columnNumber + 1 };
    try {
      const p = paramNames(frame.functionLocation);
      rec.params = p.names;
      if (p.unsupported) rec.unsupported = p.unsupported;
      else rec.values = p.names.map((n) => paramValue(frame.callFrameId, n));
    } catch (e) { rec.unsupported = 'params: ' + e.message; }
    if (rec.unsupported === 'module top level') return rec;
    try { rec.export = exportName(file, frame.functionLocation); } catch (e) { rec.export = { unsupported: e.message }; }
    return rec;
  }

  function onPaused(msg) {
    try {
      if (done) return;
      const frames = msg.params.callFrames
        .map((f) => ({ f, file: framePath(f.url || scriptUrls.get(f.location.scriptId) || '') }))
        .filter((x) => inProject(x.file));
      if (!frames.length) return;
      const first = frames[0], l = first.f.location;
      // The failing throw: its innermost in-tree frame is the target (a call site
      // pauses at the printed column), or the exception's own stack text names the
      // target -- an error is printed where it was *made*, which is not where it is
      // thrown when a helper builds it (pug's makeError) or a direct `throw new E()`
      // pauses at `throw` while the stack prints the `new` column.
      const exact = first.file === tFile && l.lineNumber === tLine && l.columnNumber === tCol;
      const desc = (msg.params.data && msg.params.data.description) || '';
      if (!exact && !printed.test(desc)) return;
      done = true;
      const result = { target: process.env.REPOMIN_CARVE_TARGET, root: root.slice(0, -1), pid: process.pid, reason: msg.params.reason,
        exception: msg.params.data && msg.params.data.description,
        frames: frames.slice(0, depth).map((x) => describe(x.f, x.file)) };
      fs.writeFileSync(out, JSON.stringify(result, null, 2));
    } catch (e) {
      try { fs.writeFileSync(out, JSON.stringify({ error: String(e && e.stack) })); } catch (e2) { /* ignore */ }
    } finally {
      try { session.post('Debugger.resume'); } catch (e) { /* ignore */ }
      if (done) {   // captured: stop pausing so the rest of the run is cheap
        setImmediate(() => { try { session.post('Debugger.disable'); session.disconnect(); } catch (e) { /* ignore */ } });
      }
    }
  }

  try {
    session = new inspector.Session();
    session.connect();
    session.on('Debugger.paused', onPaused);
    session.on('Debugger.scriptParsed', (m) => {
      try { if (!done && m.params.url) scriptUrls.set(m.params.scriptId, m.params.url); } catch (e) { /* ignore */ }
    });
    call('Debugger.enable');
    // Speed: a caught exception whose top frame is blackboxed does not pause.
    // Blackbox every file script (an absolute path or a file: URL) except the
    // files on the failing stack; node: internals and scripts named otherwise
    // (vm code such as the `fs.js` that gulp's `natives` evaluates) still pause,
    // since the failing throw often comes from them, below the target's call.
    const esc = (x) => x.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const own = stackFiles.map((f) => esc(url.pathToFileURL(f).href) + '$|' + esc(f) + '$');
    try {
      call('Debugger.setBlackboxPatterns', { patterns: ['^(?!' + own.join('|') + ')(?:file:|/)'] });
    } catch (e) { /* older protocol: just slower */ }
    call('Debugger.setPauseOnExceptions', { state: process.env.REPOMIN_CARVE_STATE || 'all' });
  } catch (e) {
    try { session && session.disconnect(); } catch (e2) { /* ignore */ }
  }
})();
