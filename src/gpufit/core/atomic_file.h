// Writing a run's output files so that they appear together: readers see the old files or
// the whole new set, never half of one file, and (once any later run has written into the
// folder) never some new files beside some old ones.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpufit/core/result.h"

namespace gpufit {

// Checks, before a run writes anything, that `dir` can take its output files: it is a
// directory, or it does not exist yet and its nearest existing ancestor is a writable
// directory (so that creating it will work). `flag` names the option in the message
// ("--out"). Errors (kInvalidArgument): "--out X: is a file, not a directory", "--out X:
// cannot create it: Y is not a directory", "... Y is not writable", "--out X: is a symbolic
// link to Y, which does not exist" (a dangling link: creating X would fail, "File exists").
//
// Concurrent runs into one folder: WriteFilesAtomically alone does not keep them apart (its
// renames are atomic per file); callers hold an OutputLock (output_lock.h) on the folders
// from listing an earlier run's files to the end of the commit.
Result<void> CheckOutputDir(const std::filesystem::path& dir, std::string_view flag);

// Writes every file of one run and removes `removals` (files an earlier run wrote that this
// one replaces, e.g. manifests it no longer emits) as one commit:
//   1. each file's contents go to a temporary beside it, `.NAME.gpufit-tmp-PID-XXXXXX`, and
//      are flushed to disk; if any cannot be written, all are removed and nothing is touched;
//   2. with more than one change, a journal `.gpufit-commit-PID-XXXXXX` listing every rename
//      and removal is written (itself through a temporary and rename(2)) into the folder of
//      the first file: that rename is the commit point;
//   3. the temporaries are renamed over their targets (rename(2) is atomic per file), the
//      removals done, the folders flushed, and the journal removed.
// A run killed before the commit point leaves the old files and its temporaries; one killed
// after it leaves its journal. Every call first recovers each folder it writes into: an
// abandoned journal (its process gone) is rolled forward, so the interrupted run's files
// all appear, then removed; temporaries of processes that are gone are removed, as are
// `TARGET.tmp.XXXXXX` files (the temporaries of earlier gpufit versions) beside this run's
// targets. So after an interruption, the next run into the same folders finds and leaves a
// consistent set. Not promised: a reader that looks during the renames of step 3 (a few
// milliseconds) can see a mix, and a run interrupted while writing into two folders is rolled
// forward only by a later run that writes into the journal's folder (the first file's).
// `step`, for tests that simulate an interruption, is called with "temporaries written",
// "committed" and "renamed N" (N = 1, 2, ...) as each step completes.
// Errors name the path: kInvalidArgument when the directory does not accept files (missing,
// not a directory, no permission, read-only), kInternal for other failures (disk full, a
// failed rename).
Result<void> WriteFilesAtomically(const std::vector<std::pair<std::filesystem::path, std::string>>& files,
                                  const std::vector<std::filesystem::path>& removals = {},
                                  const std::function<void(std::string_view step)>& step = {});

}  // namespace gpufit
