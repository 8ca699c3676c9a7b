// meshpp/io/detail/atomic_file.hpp — a file replaced atomically by a job: written as a
// temporary beside it, then renamed over it by rank 0 once every rank has closed it.
//
//   const std::string temporary = detail::temporary_beside(comm, path, who);  // collective
//   ... every rank writes and closes temporary ...
//   detail::rename_into_place(comm, temporary, path, who);                    // collective
//
// A job killed mid-write leaves the last good file and a stray .tmp file, never a torn one.
// The temporary's name is <path>.tmp.<pid>.<time>, drawn by rank 0 and broadcast; the file is
// fsynced before the rename and its directory after.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include <mpi.h>
#include <boost/mpi/communicator.hpp>

#include "meshpp/core/checked.hpp"
#include "meshpp/core/error.hpp"

namespace meshpp::detail {

inline std::string directory_of(const std::string& path);

// temporary_beside(comm, path, who): the temporary's name on every rank, drawn by rank 0
// (unique per job: its pid and the time), after rank 0 has checked that path's directory
// exists and is writable; else meshpp::error on every rank (who names the operation)
inline std::string temporary_beside(const boost::mpi::communicator& comm, const std::string& path,
                                    const std::string& who) {
  std::string temporary, problem;
  if (comm.rank() == 0) {
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    temporary = path + ".tmp." + std::to_string(::getpid()) + "." +
                std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(now).count());
    const std::string dir = directory_of(path);
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      problem = who + ": directory '" + dir + "' does not exist";
    else if (::access(dir.c_str(), W_OK) != 0)
      problem = who + ": directory '" + dir + "' is not writable (" + std::strerror(errno) + ")";
  }
  broadcast_text(MPI_Comm(comm), temporary, 0, "save (the temporary file's name)");
  // rank 0's verdict, broadcast: empty, or the problem every rank throws
  broadcast_text(MPI_Comm(comm), problem, 0, "checkpoint (rank 0's verdict)");
  if (!problem.empty()) throw error(problem);
  return temporary;
}

inline int sync_path(const std::string& path, bool directory);

// rename_into_place(comm, temporary, path, who): once every rank has closed temporary (a
// barrier), rank 0 fsyncs it, renames it to path and fsyncs the directory; a failure throws
// meshpp::error on every rank
inline void rename_into_place(const boost::mpi::communicator& comm, const std::string& temporary,
                              const std::string& path, const std::string& who) {
  barrier(MPI_Comm(comm), "save (every rank has closed the file)");  // complete on disk
  int failed = 0;
  if (comm.rank() == 0) {
    failed = sync_path(temporary, false);
    if (!failed && std::rename(temporary.c_str(), path.c_str()) != 0) failed = errno;
    if (!failed) sync_path(directory_of(path), true);
  }
  broadcast_values(MPI_Comm(comm), &failed, 1, 0, "save (the rename's result)");
  if (failed)
    throw error(who + ": renaming '" + temporary + "' to '" + path +
                "' failed: " + std::strerror(failed));
}

// directory_of(path): "." for a bare file name
inline std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// sync_path(path): fsync a file or directory (errors ignored on directories, where some file
// systems refuse)
inline int sync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) return directory ? 0 : errno;
  const int r = ::fsync(fd) == 0 || directory ? 0 : errno;
  ::close(fd);
  return r;
}

}  // namespace meshpp::detail
