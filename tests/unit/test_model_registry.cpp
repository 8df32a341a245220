// ModelRegistry: a hot reload is an operation of the shared instance. The
// batcher's model, the key later elements must agree with and the
// generation change once, for every element holding the id.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <stdexcept>
#include <string>

#include "batcher_fakes.h"
#include "batching/model_registry.h"
#include "common/error.h"

using namespace torchinfer;
using namespace torchinfer::test;
using namespace std::chrono_literals;

namespace {

SharingKey key_of(const std::string& model) {
  return {{"model", model}, {"batch-size", "2"}};
}

// The error acquire() throws, "" if none.
std::string refusal(const std::string& id, const SharingKey& key,
                    const std::function<std::shared_ptr<Batcher>()>& make) {
  try {
    ModelRegistry::instance().acquire(id, key, make);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfigInvalid);
    return e.what();
  }
  return "";
}

}  // namespace

TEST(ModelRegistryReload, EverySharerAndALateJoinerMeetTheNewModel) {
  FakeModel fake;
  int made = 0;
  auto make = [&] {
    ++made;
    return std::make_shared<Batcher>(fake.make(1), opts(2));
  };
  auto& reg = ModelRegistry::instance();
  auto a = reg.acquire("reload-two", key_of("old.pt"), make);
  auto b = reg.acquire("reload-two", key_of("old.pt"), make);
  ASSERT_EQ(a, b);

  int asked = 0;
  auto m = reg.reload("reload-two", key_of("new.pt"), [&](int generation) {
    asked = generation;
    auto n = std::const_pointer_cast<LoadedModel>(fake.make(generation));
    n->path = "new.pt";
    return std::shared_ptr<const LoadedModel>(n);
  });
  EXPECT_EQ(asked, 2) << "one generation for the instance";
  EXPECT_EQ(m->generation, 2);
  EXPECT_EQ(b->model()->path, "new.pt") << "the other sharer runs the new model";
  EXPECT_EQ(b->model()->generation, 2);

  EXPECT_EQ(refusal("reload-two", key_of("old.pt"), make),
            "elements sharing model-instance-id 'reload-two' must use the same model (the "
            "running one has 'new.pt', this one 'old.pt')");
  auto late = reg.acquire("reload-two", key_of("new.pt"), make);
  EXPECT_EQ(late, a) << "asking for the running file joins it";
  EXPECT_EQ(made, 1);
  EXPECT_EQ(reg.users("reload-two"), 3);

  reg.reload("reload-two", key_of("third.pt"),
             [&](int generation) { return fake.make(generation); });
  EXPECT_EQ(a->model()->generation, 3) << "generations count per instance, not per element";
}

TEST(ModelRegistryReload, AFailedLoadKeepsModelKeyAndGeneration) {
  FakeModel fake;
  auto make = [&] { return std::make_shared<Batcher>(fake.make(1), opts(2)); };
  auto& reg = ModelRegistry::instance();
  auto a = reg.acquire("reload-fails", key_of("old.pt"), make);
  const auto before = a->model();
  EXPECT_THROW(reg.reload("reload-fails", key_of("bad.pt"),
                          [](int) -> std::shared_ptr<const LoadedModel> {
                            throw Error(ErrorKind::kModelInvalid, "corrupt");
                          }),
               Error);
  EXPECT_EQ(a->model(), before);
  EXPECT_EQ(refusal("reload-fails", key_of("old.pt"), make), "");
  EXPECT_NE(refusal("reload-fails", key_of("bad.pt"), make), "");
  // The generation given to the next load is still the running one's + 1.
  int asked = 0;
  reg.reload("reload-fails", key_of("good.pt"), [&](int generation) {
    asked = generation;
    return fake.make(generation);
  });
  EXPECT_EQ(asked, 2);
}

TEST(ModelRegistryReload, AnIdNobodyHoldsIsNotFound) {
  bool loaded = false;
  auto load = [&](int g) {
    loaded = true;
    return FakeModel().make(g);
  };
  try {
    ModelRegistry::instance().reload("reload-nobody", key_of("x.pt"), load);
    FAIL() << "reloaded an id nobody holds";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
    EXPECT_EQ(std::string(e.what()),
              "no element holds model-instance-id 'reload-nobody': nothing to reload");
  }
  FakeModel fake;
  auto gone = ModelRegistry::instance().acquire("reload-nobody", key_of("x.pt"), [&] {
    return std::make_shared<Batcher>(fake.make(1), opts(2));
  });
  gone.reset();
  EXPECT_THROW(ModelRegistry::instance().reload("reload-nobody", key_of("x.pt"), load), Error)
      << "the last holder left";
  EXPECT_FALSE(loaded);
}

TEST(ModelRegistryReload, AJoinerDuringTheLoadWaitsAndMeetsTheNewKey) {
  FakeModel fake;
  auto make = [&] { return std::make_shared<Batcher>(fake.make(1), opts(2)); };
  auto& reg = ModelRegistry::instance();
  auto a = reg.acquire("reload-join", key_of("old.pt"), make);
  std::promise<void> loading, finish;
  auto reloading = std::async(std::launch::async, [&] {
    reg.reload("reload-join", key_of("new.pt"), [&](int g) {
      loading.set_value();
      finish.get_future().wait();
      return fake.make(g);
    });
  });
  loading.get_future().wait();
  auto joining = std::async(std::launch::async,
                            [&] { return refusal("reload-join", key_of("old.pt"), make); });
  EXPECT_EQ(joining.wait_for(200ms), std::future_status::timeout)
      << "joined while the instance was reloading";
  finish.set_value();
  reloading.get();
  EXPECT_NE(joining.get().find("the running one has 'new.pt'"), std::string::npos);
}

TEST(ModelRegistryReload, AnUnsharedBatcherReloadsTheSameWay) {
  FakeModel fake;
  Batcher batcher(fake.make(4), opts(2));
  auto m = reload_batcher(batcher, [&](int g) { return fake.make(g); });
  EXPECT_EQ(m->generation, 5);
  EXPECT_EQ(batcher.model(), m);
  EXPECT_THROW(reload_batcher(batcher,
                              [](int) -> std::shared_ptr<const LoadedModel> {
                                throw std::runtime_error("no");
                              }),
               std::runtime_error);
  EXPECT_EQ(batcher.model(), m);
}
