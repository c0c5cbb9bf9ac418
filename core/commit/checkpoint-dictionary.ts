/**
 * The preset DEFLATE dictionaries of stored checkpoints (issue 44, decision 76), by the
 * number a stored checkpoint names in `zd`. A checkpoint's JSON is 0.5-2 KB: too short for
 * DEFLATE to learn its own keys, so without a dictionary every key's first occurrence is
 * written out in full. A dictionary is text DEFLATE may refer back to as if it preceded
 * the data: the checkpoint's keys and common values, the most frequent last (closest).
 *
 * FROZEN: a stored checkpoint is inflated with the dictionary its `zd` names, so a
 * dictionary's text must never change once released. A better one is a new number
 * (and `STORED_CHECKPOINT_DICTIONARY` moves to it); every released one stays here.
 */
const DICTIONARY_1 =
  '{"replay":{"silentBelow":0,"fencedToken":1},"stall":{"adoptions":1,"trying":1,"tries":1},' +
  '"source":{"lastSegmentAtMs":1800000000000,"intervalMs":2000,"stalled":false,"stalls":0},"invalidEtag":"\\"",' +
  '"processor":"{\\"framesSeen\\":1,\\"meanLuma\\":1,\\"lastFrame\\":1}",' +
  '{"sequencer":{"firstFrame":1,"firstSeenAtMs":1800000000000,"nextFrame":1,"buffered":[{"frame":1,"bucket":"","key":"frames/","sizeBytes":1,"seenAtMs":1800000000000}],' +
  '"late":[{"frame":1,"bucket":"","key":"segments/","sizeBytes":1,"replacesGap":false}],"endFrame":null,"lastArrivalMs":1800000000000,' +
  '"absent":{"from":1,"through":1,"atMs":1800000000000},"listedAtMs":null,"gaps":[],"recheck":{"fromFrame":1,"atMs":null}},' +
  '"framesOk":0,"framesLate":0,"framesFailed":0,"framesGap":0,"complete":false,"owners":[{"worker":"","token":1,"sinceMs":1800000000000,"fromFrame":1}],"ownerChanges":1,"firstFrame":1,"lastFrame":1,' +
  '"analytics":{"p":1,"etag":"\\"","k":["person","car","truck","bus","bicycle","motorcycle","line","zone"],"F":1,"L":[[0,0,0,0,1,0,0]],"Z":[[0,0,0,0,0,1,0,0,0]],"T":[[1,0,0,[1,3,5,7,9],[1,0],[1,0],[1]],[1,0,0,[0,2,4,6,8]]],"rulesRef":"';

/** The released dictionaries, by number (see the module comment). */
export const CHECKPOINT_DICTIONARIES: ReadonlyMap<number, Buffer> = new Map([[1, Buffer.from(DICTIONARY_1, 'utf8')]]);

/** The dictionary new checkpoints are written with. */
export const STORED_CHECKPOINT_DICTIONARY = 1;
