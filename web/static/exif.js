// A photo's exposure as a photographer reads it, for the loupe's line and
// the Details panel: shutter speed (1/250 s), aperture (f/2.8), ISO, focal
// length (50 mm), lens, and the capture time on the camera's own clock.

// number writes n with at most one decimal, and none when it is whole.
const number = (n) => String(Math.round(n * 10) / 10);

export const shutterText = (s) => (s ? `${s} s` : '');
export const apertureText = (f) => (f ? `f/${number(f)}` : '');
export const isoText = (n) => (n ? `ISO ${n}` : '');
export const focalText = (mm) => (mm ? `${number(mm)} mm` : '');

const pad = (n) => String(n).padStart(2, '0');

// capturedText is the capture time as the camera's clock showed it
// ("2015-10-29 15:44:44", with its UTC offset when the camera wrote one):
// the API's capturedAt is the instant, at that offset when there was one,
// else as if the camera's clock were UTC.
export function capturedText(capturedAt, offset) {
  if (!capturedAt) return '';
  let t = Date.parse(capturedAt);
  if (Number.isNaN(t)) return '';
  const m = /^([+-])(\d\d):(\d\d)$/.exec(offset || '');
  if (m) t += (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) * 60000;
  const d = new Date(t);
  const text = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
  return m ? `${text} (UTC${offset})` : text;
}

// exposureFacts is the six lines a photographer looks for first, in their
// order, each [name, value]; a value the file does not have is ''.
export function exposureFacts(a) {
  return [
    ['Shutter', shutterText(a.shutterSpeed)],
    ['Aperture', apertureText(a.aperture)],
    ['ISO', a.iso ? String(a.iso) : ''],
    ['Focal length', focalText(a.focalLengthMm)],
    ['Lens', a.lensModel || ''],
    ['Captured', capturedText(a.capturedAt, a.capturedOffset)],
  ];
}
