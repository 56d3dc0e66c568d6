// SPDX-License-Identifier: GPL-3.0-or-later
//
// skin_collide: collision scan of one shot, as a Flamenco 3 job type. Copy this file into
// the Manager's `scripts` folder (next to flamenco-manager) and restart the Manager; the
// Blender add-on then offers "skin_collide Scan" as a job type.
//
// One "scan-CHUNK" task per chunk of `chunk_size` frames, then a "merge" task that depends
// on every one of them. Each task runs, with Flamenco's `exec` command,
//   PYTHON -m skin_collide scan FILE --frames=A:B [--step-to=C] [flags] --json OUTPUT/scan_A_B.json
//   PYTHON -m skin_collide merge OUTPUT/scan_*.json... --json OUTPUT/report.json --junit OUTPUT/report.xml
//       --contacts-csv OUTPUT/report.contacts.csv
// exactly the commands that `python -m skin_collide farm-commands` prints for OpenCue and
// that the Open Job Description template (farm/openjd/skin_collide_scan.yaml) runs: the
// chunks are cut as OpenJD's task chunking cuts a contiguous range (core/report/chunks.py), not
// by Flamenco's frameChunker, whose fixed-size chunks (1-10, ..., 41-48) differ from
// OpenJD's (1-10, 11-20, 21-29, 30-39, 40-48) whenever the chunk size does not divide the
// range. tests/cli/test_farm.py checks this script against both.
//
// `python` is the workers' interpreter with the bpy module and skin_collide installed (or a
// wrapper that runs skin_collide in the workers' Blender binary, see docs/cli.md, "On a
// render farm"). The shot's built collision data travels in the .blend: chunks of a file
// built and saved in the panel skip the build; a Disk Cache folder must sit beside the
// file on the shared storage.

const JOB_TYPE = {
    label: "skin_collide Scan",
    description: "Collision scan of a shot's skinned characters, in chunks of frames, then the merge of the reports",
    settings: [
        { key: "frames", type: "string", required: true,
          eval: "f'{C.scene.frame_start}-{C.scene.frame_end}'",
          description: "Frames to scan, one contiguous range: '1-48' (or '1..48'; '-5--1' for negative frames)" },
        { key: "scene", type: "string", default: "", eval: "C.scene.name_full", visible: "submission",
          description: "The scene to scan (scan --scene NAME; the add-on fills in the current one); empty for the scene the file was saved on" },
        { key: "chunk_size", type: "int32", default: 10, propargs: {min: 1}, visible: "submission",
          description: "Frames per scan task (each task loads the file once)" },
        { key: "output_dir", type: "string", subtype: "dir_path", required: true, visible: "submission",
          description: "Folder for the chunk reports, report.json, report.xml (JUnit) and report.contacts.csv; it must exist" },
        { key: "self", type: "bool", default: false, visible: "submission",
          description: "Also each object against itself (scan --self)" },
        { key: "method", type: "string", default: "sphere-tree", visible: "submission",
          choices: ["sphere-tree", "bottom-up", "sphere-tree-pv", "box-tree", "obb", "sphere-set", "chains", "rebuild"],
          description: "The collision method (scan --method)" },
        { key: "first_hit", type: "bool", default: false, visible: "submission",
          description: "At most one pair per colliding frame (scan --first-hit)" },
        { key: "ignore_rest_contacts", type: "bool", default: false, visible: "submission",
          description: "Drop the pairs that collide in the rest pose (scan --ignore-rest-contacts)" },
        { key: "allow", type: "string", subtype: "file_path", default: "", visible: "submission",
          description: "Reviewed pairs to drop (scan --allow FILE); empty for none" },
        { key: "clearance", type: "string", default: "", visible: "submission",
          description: "Also near contacts within D (scan --clearance D: 2mm, 1cm or scene units); empty for none" },
        { key: "near_pairs", type: "bool", default: false, visible: "submission",
          description: "List the near polygon pairs (scan --near-pairs; needs a clearance)" },
        { key: "between_frames", type: "bool", default: false, visible: "submission",
          description: "Also check the steps between frames, linear motion from one frame to the next (scan --between-frames)" },
        { key: "subframes", type: "int32", default: 1, propargs: {min: 1, max: 64}, visible: "submission",
          description: "Samples per frame with between_frames (scan --subframes N, 1 to 64)" },
        { key: "as_rendered", type: "bool", default: false, visible: "submission",
          description: "Check the surfaces renders draw, Blender's render-mode evaluation (scan --as-rendered)" },
        { key: "enable_autoexec", type: "bool", default: false, visible: "submission",
          description: "Trust the file's scripts, as Blender's -y (scan --enable-autoexec): drivers calling its functions evaluate" },
        { key: "allow_failed_drivers", type: "bool", default: false, visible: "submission",
          description: "Go on when drivers fail, listing them in the report (scan --allow-failed-drivers); otherwise the task fails" },
        { key: "allow_missing", type: "bool", default: false, visible: "submission",
          description: "Go on when linked data is missing, listing it in the report (scan --allow-missing); otherwise the task fails" },
        { key: "python", type: "string", default: "python3", visible: "submission",
          description: "The workers' Python with bpy and skin_collide" },
        { key: "blendfile", type: "string", required: true, visible: "web",
          description: "The shot to scan" },
    ],
};

// "A-B", "A..B" or "F" -> [start, end]; negative frames allowed ("-5--1").
function scanRange(frames) {
    const text = String(frames).trim().replace("..", "-");
    let m = /^(-?\d+)$/.exec(text);
    if (m) {
        return [Number(m[1]), Number(m[1])];
    }
    m = /^(-?\d+)\s*-\s*(-?\d+)$/.exec(text);
    if (!m || Number(m[2]) < Number(m[1])) {
        throw `skin_collide: frames "${frames}" is not one contiguous range START-END`;
    }
    return [Number(m[1]), Number(m[2])];
}

// The chunks of [start, end] of at most `size` frames, as core/report/chunks.py's by_size cuts
// them (and OpenJD's CONTIGUOUS task chunking): ceil(n / size) chunks whose lengths differ
// by at most one, the longer ones spread evenly.
function chunksBySize(start, end, size) {
    if (!(size >= 1)) {
        throw `skin_collide: chunk_size must be at least 1, got ${size}`;
    }
    const total = end - start + 1;
    const count = Math.ceil(total / size);
    const base = Math.floor(total / count);
    const extra = total - base * count;
    const lengths = new Array(count).fill(base);
    for (let k = 0; k < extra; k++) {
        lengths[Math.floor(k * count / extra)] += 1;
    }
    const out = [];
    let a = start;
    for (const n of lengths) {
        out.push([a, a + n - 1]);
        a += n;
    }
    return out;
}

// A chunk's name, as OpenJD and Flamenco write a range: "7", "7,8", "7-16".
function chunkName(a, b) {
    if (a == b) return `${a}`;
    if (b == a + 1) return `${a},${b}`;
    return `${a}-${b}`;
}

function chunkReport(outputDir, a, b) {
    return `${String(outputDir).replace(/\/+$/, "")}/scan_${a}_${b}.json`;
}

// The scan flags, in farm_commands.scan_flags's order.
function scanFlags(settings) {
    const flags = [];
    if (settings.scene) flags.push("--scene", settings.scene);
    if (settings.self) flags.push("--self");
    flags.push("--method", settings.method || "sphere-tree");
    if (settings.first_hit) flags.push("--first-hit");
    if (settings.ignore_rest_contacts) flags.push("--ignore-rest-contacts");
    if (settings.allow) flags.push("--allow", settings.allow);
    if (settings.clearance) flags.push("--clearance", String(settings.clearance));
    if (settings.near_pairs) flags.push("--near-pairs");
    if (settings.between_frames) flags.push("--between-frames");
    if (settings.between_frames && Number(settings.subframes || 1) > 1) {
        flags.push("--subframes", String(Number(settings.subframes)));
    }
    if (settings.as_rendered) flags.push("--as-rendered");
    if (settings.enable_autoexec) flags.push("--enable-autoexec");
    if (settings.allow_failed_drivers) flags.push("--allow-failed-drivers");
    if (settings.allow_missing) flags.push("--allow-missing");
    return flags;
}

function skinCollideCommand(settings, args) {
    return author.Command("exec", {
        exe: settings.python || "python3",
        args: ["-m", "skin_collide"].concat(args),
    });
}

function compileJob(job) {
    const settings = job.settings;
    const [start, end] = scanRange(settings.frames);
    const parts = chunksBySize(start, end, Number(settings.chunk_size));
    const flags = scanFlags(settings);
    const out = String(settings.output_dir).replace(/\/+$/, "");

    const mergeTask = author.Task("merge", "blender");
    const reports = [];
    if (!settings.between_frames && Number(settings.subframes || 1) > 1) {
        throw `skin_collide: subframes ${settings.subframes} samples the motion between frames: it needs between_frames`;
    }
    for (const [k, [a, b]] of parts.entries()) {
        const task = author.Task(`scan-${chunkName(a, b)}`, "blender");
        const report = chunkReport(out, a, b);
        // A step that spans two chunks is checked by the chunk that holds its first frame.
        const step = settings.between_frames && k + 1 < parts.length
            ? [`--step-to=${parts[k + 1][0]}`] : [];
        task.addCommand(skinCollideCommand(settings,
            ["scan", settings.blendfile, `--frames=${a}:${b}`].concat(step, flags, ["--json", report])));
        job.addTask(task);
        mergeTask.addDependency(task);
        reports.push(report);
    }
    mergeTask.addCommand(skinCollideCommand(settings,
        ["merge"].concat(reports, ["--json", `${out}/report.json`, "--junit", `${out}/report.xml`,
            "--contacts-csv", `${out}/report.contacts.csv`])));
    job.addTask(mergeTask);
}
