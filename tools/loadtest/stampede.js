// Cache stampede: 200 VUs hammer one hot key (GET /products/1) for 30 s, so
// its entry expires several times under full load. Run the app with a short
// CACHE_SOFT_TTL (e.g. 2s) and RATE_LIMIT=off; see tools/loadtest/README.md.
import http from 'k6/http';
import { check, sleep } from 'k6';
import { Counter } from 'k6/metrics';

const BASE_URL = __ENV.BASE_URL || 'http://localhost:8080';
const PRODUCT_ID = __ENV.PRODUCT_ID || '1';
const PAUSE = Number(__ENV.PAUSE || 0); // seconds between requests per VU; 0 = hammer

// One counter per X-Cache value: MISS should stay tiny (one per expiry per
// instance at most); STALE shows stale-while-revalidate at work.
const cacheHit = new Counter('xcache_hit');
const cacheMiss = new Counter('xcache_miss');
const cacheStale = new Counter('xcache_stale');
const cacheOther = new Counter('xcache_other');

export const options = {
  scenarios: {
    stampede: {
      executor: 'constant-vus',
      vus: Number(__ENV.VUS || 200),
      duration: __ENV.DURATION || '30s',
    },
  },
  thresholds: {
    // No request fails while the hot key expires (fewer than 1 in 1000).
    http_req_failed: ['rate<0.001'],
    // Nobody waits for the recompute: p99 stays below 250 ms.
    http_req_duration: ['p(99)<250'],
    // Every answer says where it came from.
    'checks{promise:x_cache}': ['rate==1'],
  },
};

export default function () {
  const res = http.get(`${BASE_URL}/products/${PRODUCT_ID}`, {
    tags: { name: 'GET /products/:id' },
  });
  const xc = res.headers['X-Cache'];
  switch (xc) {
    case 'HIT': cacheHit.add(1); break;
    case 'MISS': cacheMiss.add(1); break;
    case 'STALE': cacheStale.add(1); break;
    default: cacheOther.add(1);
  }
  check(res, { 'status is 200': (r) => r.status === 200 });
  check(res, { 'X-Cache is HIT, MISS or STALE': () => ['HIT', 'MISS', 'STALE'].includes(xc) },
    { promise: 'x_cache' });
  if (PAUSE > 0) sleep(PAUSE);
}
