// Runs a Flamenco job-type script's compileJob(job) outside Flamenco, with a stand-in for
// the Manager's `author` module that records what the script authors, and prints the job
// as JSON: {"tasks": [{"name", "type", "commands": [{"name", "parameters"}],
// "dependencies": [task names]}]}. Used by tests/cli/test_farm.py.
//
//   node flamenco_author_stub.js SCRIPT.js '{"settings": {...}}'
//
// The Manager runs job types in a plain ECMAScript VM (goja) with `author`, `print`,
// `alert` and `path` among its globals; this gives the script those (path as Node's posix
// path). A script that used another Manager global would fail here, saying so.
"use strict";

const fs = require("fs");
const vm = require("vm");
const nodePath = require("path");

function makeAuthor() {
    return {
        Task(name, type) {
            name = String(name).trim();
            type = String(type).trim();
            if (!name) throw new Error("author.Task(name, type): name is required");
            if (!type) throw new Error("author.Task(name, type): type is required");
            const task = {
                name, type, commands: [], dependencies: [],
                addCommand(cmd) { this.commands.push(cmd); },
                addDependency(dep) { this.dependencies.push(dep); },
            };
            return task;
        },
        Command(name, parameters) {
            return { name, parameters };
        },
    };
}

function main() {
    const [script, jobJson] = process.argv.slice(2);
    const job = Object.assign({ tasks: [] }, JSON.parse(jobJson));
    job.addTask = function (task) { this.tasks.push(task); };
    const printed = [];
    const context = vm.createContext({
        author: makeAuthor(),
        print: (...args) => printed.push(args.join(" ")),
        alert: (...args) => printed.push(args.join(" ")),
        path: nodePath.posix,
    });
    vm.runInContext(fs.readFileSync(script, "utf8"), context, { filename: script });
    const jobType = vm.runInContext("typeof JOB_TYPE === 'undefined' ? null : JOB_TYPE", context);
    vm.runInContext("compileJob", context)(job);
    const names = new Map(job.tasks.map((t) => [t, t.name]));
    const result = {
        jobType,
        tasks: job.tasks.map((t) => ({
            name: t.name,
            type: t.type,
            commands: t.commands,
            dependencies: t.dependencies.map((d) => names.has(d) ? names.get(d) : `<not added: ${d.name}>`),
        })),
    };
    process.stdout.write(JSON.stringify(result));
}

try {
    main();
} catch (err) {
    process.stderr.write(`compileJob failed: ${err && err.message ? err.message : err}\n`);
    process.exit(3);
}
